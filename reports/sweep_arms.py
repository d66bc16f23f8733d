"""Which arms a sweep tabulates: the rule-made ones per kernel and, beside each, the tuners the
sweep recorded as held against it (sweep.json's `tuners`), so that no tuner is named here."""

from __future__ import annotations

from pool_fusion_tuning.runfolder.records import Sweep

# The rule-made arms of each kernel a sweep tabulates, the first the one its tuners are held
# against: the pool kernel's (the candidate rule's, the serial schedule's), the whole graph's.
RULE_MADE = (("fixed", "serial"), ("one-kernel",))
CAPTURED = ("fixed+capture", "one-kernel+capture")
# What sweeps stored before they recorded their tuners (2026-12-01) ran: tuner -> its arm's
# rule-made arm.
_EARLIER_SWEEP_TUNERS = {"optuna": "fixed", "optuna-one-kernel": "one-kernel"}


def sweep_tuners(sweep: Sweep) -> dict[str, str]:
    """Tuner -> the rule-made arm its arm is held against, as the sweep recorded."""
    return sweep.get("tuners", _EARLIER_SWEEP_TUNERS)


def tuned_against(tuners: dict[str, str], arm: str) -> list[str]:
    """The tuners held against `arm`, in the sweep's order."""
    return [tuner for tuner, held in tuners.items() if held == arm]


def kernel_arms(tuners: dict[str, str]) -> list[str]:
    """Each kernel's rule-made arms, then its tuners."""
    return [arm for group in RULE_MADE for arm in (*group, *tuned_against(tuners, group[0]))]


def end_to_end_arms(tuners: dict[str, str]) -> list[str]:
    """The arms whose whole graph a sweep tabulates."""
    return ["partial", "on", *kernel_arms(tuners), *CAPTURED]
