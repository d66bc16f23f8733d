"""`tune model` and `tune models`: real networks through the study's measurement.

    model_plan.py    what a model run measures (run.json), and its arms' names
    prepare.py       the CPU work before any timing, in parallel processes: import and
                     analysis, a build per rule list, torch.compile's first compile
    kernel_times.py  every kernel under every rule list: checked, then timed (kernel_times.json)
    kernel_choice.py which kernels --tune-top takes (the costliest), and their kinds
    tune_top.py      the costliest kernels (pattern ones, or any) tuned by the study's tuners
    model_run.py     one model's run, phase by phase, each skipped where stored (resumable)
    model_series.py  `tune models`: the built-in list, --models or a zoo (--zoo), one run
                     folder per model, models.md (and a zoo's census.md)

It sits on the top floor of `tuning/`, beside study.py and sweep.py: it uses the harness
(`measure/`, through `measure/model_workload.py`), the kernel timer (`candidates/`), the tuners
and the run folder, and `baselines/models/` for everything the model itself needs.
"""
