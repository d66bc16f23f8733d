"""What the command line checks of `--storage URL` for the Optuna tuners (`spec.StorageChecks`):
the URL as run.json keeps it, the file it names, and the study opened in it before the run
folder exists."""

from __future__ import annotations

from pool_fusion_tuning.runfolder.store import RunError

from .optuna_study import STUDY_NAME, open_study, study_name
from .optuna_study import new_study_base as new_study
from .storages import (
    cannot_open,
    check_untouched,
    remember_password,
    storage_file,
    storage_for,
    storage_problem,
)

__all__ = [
    "new_study",
    "open_first",
    "reach",
    "remember_password",
    "storage_file",
    "storage_problem",
]


def open_first(
    url: str,
    identity: dict,
    password_env: str | None,
    study: str | None,
    whole: bool = False,
) -> None:
    """The tuner's study in the storage the run shares (with `whole`, the one-kernel tuner's),
    under the run's `study` name: created, or checked to be this run's."""
    open_study(url, study_name(whole, True, study or STUDY_NAME), None, identity, password_env)


def reach(url: str, password_env: str | None) -> None:
    """The storage opens (Optuna's tables made where it is new) before any work, so that one
    that cannot be used is said in one line before a run folder exists."""
    check_untouched(url)
    try:
        storage_for(None, url, password_env).get_all_studies()
    except RunError:
        raise
    except Exception as error:  # whatever the storage backend raises, said in one line
        raise cannot_open(error) from None
