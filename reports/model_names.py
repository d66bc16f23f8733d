"""The names a model report goes by, shared by its summary (`model_report.py`), its markdown
(`model_md.py`) and its plots (`model_plots.py`): the default rule list, the tuned arm, an arm's
name for a list, and how close a predicted gain must come to the measured one."""

from __future__ import annotations

DEFAULT = "default"
TUNED = "tvm-tuned"
# A model list's predicted gain agrees with the measured one within this share.
AGREEMENT = 0.10


def arm_of(rules: str) -> str:
    return f"tvm-{rules}"
