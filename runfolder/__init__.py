"""The run folder, the contract between measuring and reporting: one type per file (`records`),
files written atomically and checked on read against their type (`store`, `checker`), one writer
at a time (`lock`). No TVM, nothing of tuning."""
