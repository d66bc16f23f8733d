"""Real networks (torchvision, timm, a user's file) through the study's pipeline: the model side
of `tune model` and `tune models`.

    model_spec.py    SPEC text and options, validated (no torch, no TVM)
    model_errors.py  what can go wrong, as one-line errors the CLI prints (exit 2)
    load.py          the PyTorch module and its example inputs (random weights, nothing downloaded)
    importer.py      torch.export + Relax's importer: the Relax module of a model
    kernels.py       a model's kernels (PrimFuncs), unscheduled or by a rule list, for kernel timing
    pattern.py       the idle-lane pattern, stated once: its text and its test
    analysis.py      per kernel, for CUDA without a GPU: rule per list, launch, window, pattern
    failures.py      a rule that raises on a kernel, as a finding (rule, TVM's message, issue)
    declines.py      why the window rule leaves a kernel to another rule (the census says it)
    build.py         the VM executable for a rule list, and a run on NumPy inputs
    eager_check.py   PyTorch eager as the reference (TF32 off), and the tolerance
    catalog.py       the built-in list `tune models` runs
    zoo.py           a library's models as specs (`tune models --zoo`), and the name filters

Nothing is re-exported here: model_spec, model_errors, failures, catalog and zoo import
neither torch nor TVM, and importing one of them must not import the others.
"""
