"""The candidate rule as a patch to apache/tvm: the rule as one dlight file (`rule`), TVM's kind of
test of it (`tvm_test`, `tvm_tests/`), and the patch with the files it adds or changes (`patch`)."""
