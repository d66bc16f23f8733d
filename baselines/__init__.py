"""The kernels, rules and arms under study, with no tuning in them (TVM and NumPy only)."""

from .script_frames import intrinsics_on_demand, know_pseudo_files

# Before anything of TVM's parses TVMScript in this process (see script_frames.py).
know_pseudo_files()
intrinsics_on_demand()
