"""Kernel-level work both tuners share: each candidate built, checked and timed once (`evaluator`,
`kernel`, `runner`, `kernel_check`, `kernel_cache`); tuners side by side, in turns on the device."""
