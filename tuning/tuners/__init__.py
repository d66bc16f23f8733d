"""The tuners: `registry.py` names them, `spec.py` says what a tuner is, `space.py` is the schedule
template's space both search; one subpackage per tuner (`optuna/`, `metaschedule/`)."""
