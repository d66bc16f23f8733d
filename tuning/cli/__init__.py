"""The `tune` command line: `main` dispatches to `run` (start, --resume), `sweep`, `worker`,
`upstream` and `report`; options, the names they accept, and the one-line faults."""
