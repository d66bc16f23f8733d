"""A candidate's outcome: typed where it is written, the same strings where it is stored."""

import json

from pool_fusion_tuning.tuning.candidates.outcome import Reason, Status, failed
from pool_fusion_tuning.tuning.candidates.summary import failures_by_reason


def test_a_stored_record_keeps_the_strings_and_compares_equal():
    record = failed(Reason.BUILD_ERROR, "nvcc: error")
    stored = json.loads(json.dumps(record))
    assert stored == {"status": "failed", "reason": "build error", "detail": "nvcc: error"}
    assert stored["status"] == Status.FAILED and Reason(stored["reason"]).at_build


def test_fresh_and_stored_failures_are_counted_under_one_reason():
    stored = json.loads(json.dumps(failed(Reason.TIME_LIMIT, "no result within 60 s")))
    fresh = failed(Reason.TIME_LIMIT, "no result within 60 s")
    counts = failures_by_reason([stored, fresh, {"status": Status.OK, "kernel_us": 1.0}])
    assert counts == {"time limit": 2} and str(counts) == "{'time limit': 2}"
