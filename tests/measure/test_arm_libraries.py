"""The arms' libraries: built in parallel processes before the trials, each build's findings
kept, a failed build named, the builds killed when the run stops."""

import multiprocessing
import os
from pathlib import Path

import psutil
import pytest
import tvm
from conftest import assert_all_gone

from pool_fusion_tuning.baselines.arms import DEFAULT_ARMS, Arm
from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.baselines.template import PoolSchedule
from pool_fusion_tuning.tuning.measure.arm_libraries import ArmLibraries, with_builds

SMALL_CASE = Case(channels=2, height=12, width=12, branches=2)
LLVM = TargetSpec("llvm")


class BrokenSchedule(PoolSchedule):
    """Fails to build, as a bad schedule would."""

    def apply(self, func, target):
        raise tvm.error.InternalError("injected build failure")


def _builders() -> list:
    return [psutil.Process(p.pid) for p in multiprocessing.active_children()]


def test_every_arm_is_built_once_in_parallel_processes(tmp_path):
    with ArmLibraries(SMALL_CASE, LLVM, tmp_path / "ir", True) as libraries:
        libraries.start(DEFAULT_ARMS[:2])
        libraries.start(DEFAULT_ARMS[2:])  # as a tuner's arm comes later
        builders = len(multiprocessing.active_children())
        found = libraries.built()
        assert multiprocessing.active_children() == []  # no builder left beside the trials
        folder = Path(libraries.path)
        libraries_built = sorted(p.name for p in folder.iterdir())
    names = [arm.name for arm in DEFAULT_ARMS]
    assert builders == min(len(names), os.cpu_count()) > 1
    assert libraries_built == sorted(f"{name}.so" for name in names)  # no partial file left
    assert not folder.exists()  # the folder lives as long as the run
    assert set(found) == set(names)
    assert all(set(build) == {"build_s"} and build["build_s"] > 0 for build in found.values())
    assert len(list((tmp_path / "ir" / "on").glob("*_FuseTIR.py"))) == 1


def test_nothing_is_built_where_every_trial_is_measured(tmp_path):
    with ArmLibraries(SMALL_CASE, LLVM, None, False) as libraries:
        libraries.start(DEFAULT_ARMS)
        assert multiprocessing.active_children() == []
        assert libraries.built() == {} and libraries.wall_s is None


def test_a_failed_build_names_its_arm_and_the_compiler_s_error():
    broken = Arm("broken", schedule=BrokenSchedule())
    with ArmLibraries(SMALL_CASE, LLVM, None, True) as libraries:
        libraries.start([DEFAULT_ARMS[2], broken])
        with pytest.raises(RuntimeError) as raised:
            libraries.built()
    assert str(raised.value) == (
        "building arm broken failed: InternalError: injected build failure"
    )


def test_a_stop_kills_the_builds_in_flight():
    with pytest.raises(KeyboardInterrupt):
        with ArmLibraries(SMALL_CASE, LLVM, None, True) as libraries:
            libraries.start(DEFAULT_ARMS)
            builders = _builders()
            raise KeyboardInterrupt
    assert builders
    assert_all_gone(builders)


def test_the_first_trial_s_record_keeps_what_building_found():
    record = {
        "kernels": {},
        "cuda_graph_launches": {},
        "wall_s": {"build_s": {"on": 0.01, "torch-eager": 2.0}, "libraries_loaded": ["on"]},
    }
    builds = {"on": {"build_s": 3.0, "kernels": [{"name": "k"}], "cuda_graph_launches": 2}}
    merged = with_builds(record, builds)
    assert merged["kernels"] == {"on": [{"name": "k"}]}
    assert merged["cuda_graph_launches"] == {"on": 2}
    assert merged["wall_s"] == {
        "build_s": {"on": 3.0, "torch-eager": 2.0},
        "libraries_loaded": ["on"],
    }
