"""The end-to-end protocol: every arm built (`arm_libraries`), checked and timed in interleaved,
Williams-ordered blocks, a fresh process per trial (`harness`, `blocks`, `design`, `gpu_timer`)."""
