import pytest

from pool_fusion_tuning.baselines.case import Case, CaseError, parse_case


def test_default_case_is_the_issues_graph():
    case = Case()
    assert case.input_shape == (1, 16, 64, 64)
    assert case.pool_input_shape == (1, 144, 64, 64)
    assert case.pool_shape == (1, 144, 32, 32)


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(window=65), "window 65 is larger than the input"),
        (dict(stride=0), "stride must be an integer >= 1"),
        (dict(channels=0), "channels must be an integer >= 1"),
        (dict(tail=0), "tail must be an integer >= 1"),
        (dict(height=-3), "height must be an integer >= 1"),
        (dict(prelude="yes"), "prelude must be true or false"),
    ],
)
def test_invalid_cases_say_why(changes, message):
    with pytest.raises(CaseError, match=message):
        Case(**changes)


def test_parse_case_reads_key_values():
    case = parse_case(["window=3", "stride=1", "prelude=false"])
    assert (case.window, case.stride, case.prelude) == (3, 1, False)


@pytest.mark.parametrize(
    "items, message",
    [
        (["colour=3"], "unknown case key 'colour'"),
        (["window"], "takes key=value"),
        (["window=two"], "window must be an integer"),
        (["prelude=maybe"], "prelude must be true or false"),
    ],
)
def test_parse_case_errors(items, message):
    with pytest.raises(CaseError, match=message):
        parse_case(items)
