"""The candidate rule as a pull request to apache/tvm (`tune upstream --out DIR`).

tvm_tree.py (the base commit and the TVM files touched), rule.py (the rule file, the project's
baselines/window_reduction.py as TVM ships it), tvm_examples.py (its cases), tvm_test.py and
tvm_tests/ (TVM's kind of test, rendered), patch.py (the edited files and the `git format-patch`
text), pr_text.py with pr_repro.py (the PR's repro script, and what it prints), evidence.py,
models_section.py and committed.py (the PR description from run folders, or from the H200 runs
committed under reports/h200/), bundle.py (all of it, by path), author.py (who
sends it), output.py (writing into --out without following links or overwriting edits);
check.py with tree_names.py, overlay.py and check_report.py (`--check TVM_TREE`: the patch
applied, its names looked up and TVM's tests run without and with it in a scratch clone of a TVM
tree).
"""
