"""The README's `pytest -n 2` sends the tests of a module's fixture to one worker as a unit
(tests/conftest.py), which xdist does by tagging each test's id with its group."""

import os

import pytest


@pytest.fixture(scope="module")
def built_once():
    return object()


def test_a_test_of_a_module_fixture_carries_its_group_on_a_worker(built_once, request):
    if "PYTEST_XDIST_WORKER" not in os.environ or not request.config.getvalue("loadgroup"):
        pytest.skip("runs on xdist's workers with --dist loadgroup (pytest -n 2)")
    assert request.node.nodeid.endswith("@tests/test_worker_groups.py::built_once")
