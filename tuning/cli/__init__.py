"""The `tune` command line: `main` dispatches, by the subcommand `commands` reads off the first
word, to `run` (start, --resume), `sweep`, `worker`, `upstream`, `model`, `models` and `report`;
options, the names they accept, and the one-line faults."""
