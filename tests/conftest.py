import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from baselines.case import Case  # noqa: E402

# The graph and two others that change every shape parameter the template depends on.
DEFAULT = Case()
WINDOW3 = Case(channels=4, height=20, width=18, window=3, stride=1, prelude=False, tail=1,
               shared_output=True)
ODD = Case(channels=3, height=23, width=29, window=2, stride=2, branches=2, tail=2,
           shared_output=False)
CASES = [DEFAULT, WINDOW3, ODD]


@pytest.fixture(params=CASES, ids=["default", "window3", "odd"])
def case(request):
    return request.param
