"""The run folder, the contract between measuring and reporting: files written atomically and
checked on read (`store`, `shapes`), one writer at a time (`lock`). No TVM, nothing of tuning."""
