"""The Optuna study of a run in its storage: opened, or created, only if it is this run's."""

from __future__ import annotations

import json
import secrets
import time

import optuna

from pool_fusion_tuning.runfolder.store import RunError

from .storages import cannot_open, check_untouched, storage_file, storage_for

STUDY_NAME = "fused-pool"
STORAGE_ATTEMPTS = 3


def study_name(whole: bool, shared: bool, base: str = STUDY_NAME) -> str:
    """The study of tuner `optuna` (or, `whole`, `optuna-one-kernel`): a storage the user gives
    (`shared`) holds both tuners' studies; the default one in the run folder is a tuner's own.
    `base`: the run's own name in a shared storage (`new_study_base`)."""
    return f"{base}-one-kernel" if whole and shared else base


def new_study_base() -> str:
    """A study name no other run has (run.json's options keep it): two runs given one storage
    never share trials; only a resume of the same run folder finds its study again."""
    return f"{STUDY_NAME}-{secrets.token_hex(6)}"


def open_study(
    url: str,
    name: str,
    sampler,
    identity: dict | None,
    password_env: str | None = None,
    create: bool = True,
) -> optuna.Study:
    """Load or create a study; refuse storage that is damaged, unreadable or holds another
    run's study, and leave it as it is. Without `create` (a worker joining a study), a study
    the storage does not hold is refused: a misspelt name must not start a study of its own.
    With `identity` None, the study is not yet claimed (a worker reads what it holds first:
    `claim`)."""
    check_untouched(url)
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # no "A new study created" line
    path = storage_file(url)
    if not create and path is not None and not path.exists():  # opening would create it
        raise RunError(
            f"the Optuna storage {path} does not exist; name the storage of a run's study "
            "with --storage"
        )
    for attempt in range(STORAGE_ATTEMPTS):
        try:
            storage = storage_for(None, url, password_env)
            if not create:
                _require_study(storage, name)
            study = optuna.create_study(
                study_name=name,
                direction="minimize",
                load_if_exists=True,
                storage=storage,
                sampler=sampler,
            )
            break
        except RunError:
            raise
        except Exception as error:  # whatever the storage backend raises, said in one line
            # Workers starting together on a fresh database race to create its tables.
            if attempt + 1 < STORAGE_ATTEMPTS:
                time.sleep(1 + attempt)
                continue
            raise cannot_open(error) from None
    if identity is not None:
        claim(study, name, identity)
    return study


def claim(study: optuna.Study, name: str, identity: dict) -> None:
    """Refuse a study made for another run (case, or model and kernel, target, device); a new
    one is marked as this run's."""
    mine = json.dumps(identity, sort_keys=True)
    stored = study.user_attrs.get("identity")
    if stored is None and study.trials or stored not in (None, mine):
        raise RunError(
            f"the Optuna storage holds study {name!r} of another run (case, "
            "target or device); it was left as it is: pass another --storage"
        )
    if stored is None:
        study.set_user_attr("identity", mine)


def _require_study(storage, name: str) -> None:
    names = [summary.study_name for summary in storage.get_all_studies()]
    if name not in names:
        held = ", ".join(repr(n) for n in names[:5]) or "none"
        raise RunError(
            f"the Optuna storage holds no study {name!r} (it holds {held}); name one with "
            "--study, or start the run first (tune --workers K creates its study)"
        )
