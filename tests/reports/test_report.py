"""Reports rendered from run folders written with known figures and the H200's noise: CUDA
runs with the PyTorch peers or both tuners, and an llvm run."""

import json
import re

import numpy as np
import pytest
from conftest import python_without_tvm, read_json

from pool_fusion_tuning.baselines.case import Case
from pool_fusion_tuning.baselines.target import TargetSpec
from pool_fusion_tuning.reports.markdown import render
from pool_fusion_tuning.reports.report_data import summarize_run
from pool_fusion_tuning.runfolder.store import Run, write_json
from pool_fusion_tuning.tuning.measure.design import block_orders, start_row, williams_rows
from pool_fusion_tuning.tuning.measure.harness import Protocol
from pool_fusion_tuning.tuning.plan import RunPlan

# us: end to end through the call path, called from Python, GPU time with calls queued.
FIGURES = {
    "on": (107.4, 110.0, 107.3),
    "fixed": (13.5, 15.9, 7.80),
    "fixed+capture": (6.97, 8.4, 7.04),
    "torch-compile": (52.3, 52.6, 6.83),
    "torch-compile-max-autotune": (45.4, 45.7, 5.91),
    "torch-eager+capture": (29.6, 31.0, 29.7),
    "torch-compile+capture": (6.07, 7.5, 6.13),
    "torch-compile-max-autotune+capture": (5.98, 7.4, 5.95),
}
HOST_BOUND = {"fixed", "torch-compile", "torch-compile-max-autotune"}
REQUESTED = ["on", "fixed", "fixed+capture", "torch-compile", "torch-compile-max-autotune"]
TRIALS, BLOCKS, REPEAT = 3, 8, 5


def _trial(index, rng, figures=FIGURES, host_bound=HOST_BOUND) -> dict:
    names = sorted(figures)
    orders = block_orders(names, BLOCKS, start_row(index, len(names)))
    process = rng.normal(0, 0.10)  # shared by the host-bound arms in this process
    kinds = ("call_path", "python_call", "gpu_queued")[: len(next(iter(figures.values())))]
    samples = {figure: {} for figure in kinds}
    for f, figure in enumerate(samples):
        for name in names:
            host = name in host_bound or figure == "python_call"
            sd = (0.08, 0.03) if host and figure != "gpu_queued" else (0.0005, 0.0005)
            shift = process if host and figure != "gpu_queued" else rng.normal(0, 0.0005)
            samples[figure][name] = [
                list(
                    figures[name][f]
                    * np.exp(shift + rng.normal(0, sd[0]) + rng.normal(0, sd[1], REPEAT))
                )
                for _ in range(BLOCKS)
            ]
    checks = {name: {"correct": True, "max_abs_err": 0.0} for name in names}
    return {
        "trial": index,
        "format": 2,
        "checks": checks,
        "kernels": {},
        "design": {
            "arms": names,
            "rows": len(williams_rows(len(names))),
            "start_row": start_row(index, len(names)),
            "blocks": BLOCKS,
            "positions": True,
            "carryover": True,
        },
        "block_orders": orders,
        "block_samples_us": samples,
        "cuda_graph_launches": {},
    }


def _write_run(
    path,
    target: str,
    figures: dict,
    requested: list,
    tuners: dict = {},
    budget: int = 0,
    host_bound=HOST_BOUND,
    seed: int = 0,
) -> Run:
    """A run folder as `tune` leaves it; `tuners` maps a tuner to its summary."""
    arms = [*requested, *(name for name in tuners if name in figures)]
    run = Run.create(
        path,
        RunPlan(
            Case(),
            TargetSpec(target, device=f"a {target} device"),
            Protocol(trials=TRIALS, blocks=BLOCKS, repeat=REPEAT),
            arms,
            [name for name in tuners if name in figures],
            budget,
            command="tune ...",
        ).meta(),
    )
    run.update_meta(
        arms=[{"name": name, "whole_graph": False} for name in arms],
        peers_added=[],
        peers_not_measured={},
    )
    write_json(run.path / "environment.json", {"target": target})  # a report needs one
    for name, summary in tuners.items():
        write_json(run.tuner_dir(name) / "summary.json", summary)
    rng = np.random.default_rng(seed)
    for index in range(TRIALS):
        run.save_trial(_trial(index, rng, figures, host_bound))
    return run


@pytest.fixture(scope="module")
def peers_run(tmp_path_factory):
    names = [
        *REQUESTED,
        "torch-eager+capture",
        "torch-compile+capture",
        "torch-compile-max-autotune+capture",
    ]
    run = Run.create(
        tmp_path_factory.mktemp("h200") / "run",
        RunPlan(
            Case(),
            TargetSpec("cuda", "sm_90", "NVIDIA H200 sm_90"),
            Protocol(trials=TRIALS, blocks=BLOCKS, repeat=REPEAT),
            names,
            command="tune ...",
        ).meta(),
    )
    run.update_meta(peers_added=names[len(REQUESTED) :], peers_not_measured={})
    write_json(run.path / "environment.json", {"gpu": "NVIDIA H200"})  # a report needs one
    rng = np.random.default_rng(0)
    for index in range(TRIALS):
        run.save_trial(_trial(index, rng))
    return run


@pytest.fixture(scope="module")
def report(peers_run):
    return summarize_run(peers_run)


def test_every_arm_has_three_figures(report):
    for name, (call_path, python_call, gpu) in FIGURES.items():
        figures = report["arms"][name]["figures"]
        assert figures["call_path"]["median_us"] == pytest.approx(call_path, rel=0.2)
        assert figures["python_call"]["median_us"] == pytest.approx(python_call, rel=0.2)
        assert figures["gpu_queued"]["median_us"] == pytest.approx(gpu, rel=0.01)


def test_pytorch_is_compared_like_for_like_in_every_figure(report):
    for figure, ratios in report["ratios_by_figure"].items():
        assert {
            "fixed+capture/torch-compile+capture",
            "fixed+capture/torch-eager+capture",
            "fixed/torch-compile",
            "fixed/torch-compile-max-autotune",
            "fixed+capture/torch-compile-max-autotune+capture",
        } <= set(ratios), figure
        assert "fixed/torch-compile+capture" not in ratios  # not like for like


def test_gpu_time_ratios_are_within_one_percent(report):
    for pair, ratio in report["ratios_by_figure"]["gpu_queued"].items():
        assert ratio["half_width"] < 0.01, pair
        top, bottom = pair.split("/")
        assert ratio["low"] <= FIGURES[top][2] / FIGURES[bottom][2] <= ratio["high"], pair


def _sentences(paragraph: str) -> list[str]:
    return re.split(r"(?<=\.) (?=[A-Z`])", paragraph)


# `a/b = r (95% CI low–high)` and the verdict after it.
VERDICT = re.compile(
    r"(\S+)/(\S+) = ([\d.]+) \(95% CI ([\d.]+)–([\d.]+)\)"
    r"(: `([^`]+)` is faster|, cannot be told apart)"
)


def _check_paragraph(paragraph: str) -> list[tuple]:
    """At most eight sentences, none twice, each verdict its interval's; the verdicts."""
    sentences = _sentences(paragraph)
    assert len(sentences) == len(set(sentences)), paragraph
    assert len(sentences) <= 8, sentences
    assert "x faster" not in paragraph
    verdicts = VERDICT.findall(paragraph)
    for top, bottom, _, low, high, said, faster in verdicts:
        if float(low) <= 1 <= float(high):
            assert said == ", cannot be told apart", (top, bottom)
        else:
            assert faster == (top if float(high) < 1 else bottom), (top, bottom)
    return verdicts


def test_the_paragraph_holds_the_candidate_and_the_fair_peers_once(report):
    paragraph = render(report).split("\n\n")[1]
    verdicts = _check_paragraph(paragraph)
    pairs = [f"{top}/{bottom}" for top, bottom, *_ in verdicts]
    assert pairs.count("fixed/on") == 1
    assert pairs.count("fixed/torch-compile") == 2  # two figures, each named
    assert pairs.count("fixed+capture/torch-compile+capture") == 2
    assert (
        "Like for like against PyTorch (captured), `fixed+capture` against "
        "`torch-compile+capture`: end to end, called from Python: "
    ) in paragraph
    assert "GPU time, calls queued: fixed/torch-compile = " in paragraph
    # The other peers are in the table of ratios, not the paragraph.
    assert "torch-compile-max-autotune" not in paragraph
    assert "| `fixed/torch-compile-max-autotune` |" in render(report)
    assert "Added beside the TVM `+capture` arms" in render(report)
    assert json.dumps(report)  # report.json is plain JSON


def test_the_report_renders_the_same_without_tvm(peers_run, report):
    python_without_tvm(
        "from pool_fusion_tuning.reports.render import render_run\n"
        "from pool_fusion_tuning.runfolder.store import Run\n"
        f"render_run(Run({str(peers_run.path)!r}))"
    )
    assert (peers_run.path / "report.md").read_text() == render(report)
    assert read_json(peers_run.path / "report.json") == json.loads(json.dumps(report))


# A default-style CUDA run: the issue's arms, `fixed`, and both tuners' arms.
DEFAULT_FIGURES = {
    "off": (17.0, 19.0, 16.9),
    "partial": (17.1, 19.2, 17.0),
    "on": (107.4, 110.0, 107.3),
    "serial": (13.7, 16.0, 8.0),
    "fixed": (13.5, 15.9, 7.80),
    "optuna": (14.3, 16.6, 7.7),
    "metaschedule": (14.0, 16.4, 7.75),
}
OPTUNA = {
    "trials": 500,
    "valid": 500,
    "failed_by_reason": {},
    "wall_s": 137.0,
    "best_kernel_us": 2.20,
    "best_trial": 62,
    "fixed_kernel_us": 2.42,
    "default_kernel_us": 99.2,
    "serial_kernel_us": 2.28,
    "timer": "cuda-events",
}
MS_RUN = {
    "trials": 250,
    "valid": 249,
    "failed_by_reason": {"build": 1},
    "wall_s": 60.0,
    "best_kernel_us": 2.34,
    "best_trial": 98,
    "timer": "cuda-events",
}
MS = {
    **MS_RUN,
    "source": "ms-space",
    "runs": {"ms-default": {**MS_RUN, "best_kernel_us": 4.1}, "ms-space": MS_RUN},
}


@pytest.fixture(scope="module")
def default_report(tmp_path_factory):
    run = _write_run(
        tmp_path_factory.mktemp("default") / "run",
        "cuda",
        DEFAULT_FIGURES,
        ["off", "partial", "on", "serial", "fixed"],
        {"optuna": OPTUNA, "metaschedule": MS, **MS["runs"]},
        budget=500,
        host_bound=set(DEFAULT_FIGURES) - {"on"},
    )
    return summarize_run(run)


def test_the_paragraph_names_fixed_against_on_and_the_tuned_optimum(default_report):
    paragraph = render(default_report).split("\n\n")[1]
    verdicts = _check_paragraph(paragraph)
    pairs = [f"{top}/{bottom}" for top, bottom, *_ in verdicts]
    assert pairs.count("fixed/on") == 1 and pairs.count("on/partial") == 1
    assert "The candidate fix `fixed`" in paragraph
    # The kernel against the best tuned (2.42 / 2.20), each tuner once, best first.
    assert (
        "its kernel takes 2.42 us, 1.10x the best tuned kernel (`optuna` 2.20 us, found at "
        "trial 62 of 500; `metaschedule` 2.34 us, found at trial 98 of 250)"
    ) in paragraph
    assert paragraph.count("at trial 62 of 500") == 1
    arms = default_report["arms"]
    fastest = min(("optuna", "metaschedule"), key=lambda name: arms[name]["median_us"])
    assert pairs.count(f"fixed/{fastest}") == 1


def test_a_tuner_of_two_runs_counts_both_and_numbers_its_best_within_its_source(default_report):
    """MetaSchedule's trials are both runs'; its best numbered in its source run (`best_of`)."""
    tuners = {**default_report["tuners"]}
    tuners["metaschedule"] = {**tuners["metaschedule"], "trials": 306, "best_of": 250}
    text = render({**default_report, "tuners": tuners})
    assert "`metaschedule` 2.34 us, found at trial 98 of 250)" in text.split("\n\n")[1]
    tuners_md = text.split("## Tuners")[1].splitlines()
    row = next(line for line in tuners_md if line.startswith("| `metaschedule` |"))
    assert row.startswith("| `metaschedule` | 306 | ")


def test_the_tuner_section_says_what_the_budget_counted(default_report):
    text = render(default_report)
    section = text.split("## Tuners")[1]
    assert (
        "`--budget 500` counted, per tuner: `metaschedule`, candidates of its two runs "
        "together: `ms-default` half of it (rounded down), `ms-space` the rest: 250 "
        "(`ms-default`) and 250 (`ms-space`) measured; `optuna`, trials of one Optuna study, "
        "failed candidates included (fewer where the space is spent): 500 measured."
    ) in section


# An llvm run: two figures, and `fixed` is `on` (the candidate rule is a GPU rule).
CPU_FIGURES = {
    "off": (40.0, 45.0),
    "partial": (41.0, 46.0),
    "on": (38.0, 43.0),
    "serial": (45.0, 50.0),
    "fixed": (38.0, 43.0),
}


def test_on_a_cpu_fixed_and_on_cannot_be_told_apart(tmp_path):
    run = _write_run(
        tmp_path / "run", "llvm", CPU_FIGURES, list(CPU_FIGURES), host_bound=set(CPU_FIGURES)
    )
    report = summarize_run(run)
    ratio = report["ratios"]["fixed/on"]
    assert ratio["low"] <= 1 <= ratio["high"]  # what the verdict below rests on
    paragraph = render(report).split("\n\n")[1]
    _check_paragraph(paragraph)
    assert re.search(r"fixed/on = [\d.]+ \(95% CI [\d.]+–[\d.]+\), cannot be told apart", paragraph)
    assert "`fixed` is faster" not in paragraph and "GPU time" not in paragraph
    assert "a GPU rule: on llvm it builds what ON builds" in paragraph


def test_a_tuner_no_report_names_is_held_against_the_arm_its_summary_declares(tmp_path):
    """A tuner's ratios come from its summary.json (`held_against`), not from reports/."""
    summary = {**OPTUNA, "kernel_times": {"toy": "best_kernel_us"}}
    tuners = {"toy": {**summary, "held_against": "serial"}, "other": summary}
    figures = {**CPU_FIGURES, "toy": (30.0, 35.0), "other": (31.0, 36.0)}
    run = _write_run(tmp_path / "run", "llvm", figures, list(CPU_FIGURES), tuners)
    report = summarize_run(run)
    assert "serial/toy" in report["ratios"] and "serial/toy" in render(report)
    # A summary that declares no arm (and no earlier run's record names) gets none.
    assert not [pair for pair in report["ratios"] if pair.endswith("/other")]


def test_the_report_says_where_the_run_s_time_went():
    from pool_fusion_tuning.reports.markdown import wall_text

    text = "\n".join(
        wall_text(
            {
                "phase_wall_s": {"optuna": 101.4, "tuning": 120.6, "comparison": 95.2},
                "wall_s": 230.1,
            }
        )
    )
    assert "optuna 101 s, tuning 121 s, comparison 95 s; the whole run 230 s." in text
    assert "arm builds" not in text
    assert wall_text({"phase_wall_s": {}, "wall_s": None}) == []  # a run from before
    walls = {"tuning": 120.6, "arm builds": 9.2, "comparison": 95.2}
    text = "\n".join(wall_text({"phase_wall_s": walls, "wall_s": 230.1}))
    assert "the arms' libraries build beside them (`arm builds`" in text
    assert "tuning 121 s, arm builds 9 s, comparison 95 s" in text


# A CUDA run's default arms with PyTorch, plain and captured; figures of the H200 runs.
WHOLE_FIGURES = {
    **DEFAULT_FIGURES,
    **FIGURES,
    "one-kernel": (6.64, 8.86, 2.41),
    "one-kernel+capture": (3.27, 9.37, 2.33),
}
WHOLE_REQUESTED = [
    "off",
    "partial",
    "on",
    "serial",
    "fixed",
    "fixed+capture",
    "one-kernel",
    "one-kernel+capture",
    "torch-compile",
    "torch-compile-max-autotune",
    "torch-eager+capture",
    "torch-compile+capture",
    "torch-compile-max-autotune+capture",
]


@pytest.fixture(scope="module")
def whole_report(tmp_path_factory):
    run = _write_run(
        tmp_path_factory.mktemp("whole") / "run",
        "cuda",
        WHOLE_FIGURES,
        WHOLE_REQUESTED,
        {"optuna": OPTUNA, "metaschedule": MS, **MS["runs"]},
        budget=500,
        host_bound=(set(DEFAULT_FIGURES) - {"on"}) | HOST_BOUND,
    )
    peers = [name for name in WHOLE_REQUESTED if name.startswith("torch-")]
    run.update_meta(
        arms=[
            {"name": name, "whole_graph": name.startswith("one-kernel"), "peer": name in peers}
            for name in [*WHOLE_REQUESTED, "optuna", "metaschedule"]
        ]
    )
    write_json(
        run.path / "environment.json",
        {"gpu": "NVIDIA H200", "tvm": "0.27.0.post1", "date": "2026-12-01T10:00:00+00:00"},
    )
    return summarize_run(run)


def test_the_paragraph_states_the_whole_graph_against_pytorch_like_for_like(whole_report):
    """Plain against torch.compile by GPU time, captured against captured; sentences as above."""
    paragraph = render(whole_report).split("\n\n")[1]
    verdicts = _check_paragraph(paragraph)
    pairs = [f"{top}/{bottom}" for top, bottom, *_ in verdicts]
    assert pairs.count("one-kernel/torch-compile") == 1
    assert pairs.count("one-kernel+capture/torch-compile+capture") == 1
    assert "like for like against PyTorch, plain, GPU time, calls queued: one-kernel/" in paragraph
    assert (
        "captured, end to end, own call path: one-kernel+capture/torch-compile+capture = "
    ) in paragraph
    # 2.41 against 6.83 us of GPU time: `one-kernel` ahead, as its interval says
    assert "`one-kernel` is faster" in paragraph
    assert pairs.count("fixed/on") == 1 and pairs.count("one-kernel/fixed") == 1


def test_what_was_not_measured_joins_the_last_sentence(whole_report):
    from pool_fusion_tuning.reports.paragraph import headline

    failed = {
        **whole_report,
        "tuner_failures": {"metaschedule": "it measured nothing"},
        "peers_not_measured": {"torch-eager": "PyTorch is not installed"},
    }
    sentences = _sentences(headline(failed))
    assert len(sentences) <= 8, sentences
    assert sentences[-1].startswith("Tuner `metaschedule` gave no arm: it measured nothing; ")
    assert (
        "; not measured: `torch-eager` (PyTorch is not installed); every arm matched"
        in (sentences[-1])
    )


def _check_comment(text: str) -> list[str]:
    """Within 2,500 characters: the paragraph's verdicts, one table, the environment folded."""
    from pool_fusion_tuning.reports.comment import LIMIT

    assert len(text.encode()) <= LIMIT, len(text.encode())
    bullets = [line[2:] for line in text.splitlines() if line.startswith("- ")]
    assert 3 <= len(bullets) <= 4, bullets
    _check_paragraph(" ".join(bullets))
    assert "`report.md`" in text and "tune report DIR" in text
    header = next(line for line in text.splitlines() if line.startswith("| arm |"))
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert all(row.count("|") == header.count("|") for row in rows)
    assert "| — | — |" not in text.replace("| — | — | — |", "")  # no column left empty
    return rows


def test_the_comment_holds_the_default_run_within_its_limit(whole_report):
    from pool_fusion_tuning.reports.comment import render_comment

    text = render_comment(whole_report)
    rows = _check_comment(text)
    assert len(rows) == len(whole_report["arms"])  # every arm fits
    assert "<details><summary>Environment</summary>" in text and "gpu: NVIDIA H200" in text
    assert text.startswith("`tune ...` on a cuda device, TVM 0.27.0.post1, 2026-12-01")
    assert "| arm | end to end, us | GPU time, us | fused kernel, us | / ON (95% CI) |" in text
    assert "one-kernel/torch-compile = " in text and "`one-kernel` is faster" in text
    assert "| `on` | " in text and " | 1 |" in text
    # the unfused arms against ON: the inverse of ON's ratio over them, interval inverted
    ratio = whole_report["ratios"]["on/partial"]
    assert "| `partial` | " in text
    assert f"{1 / ratio['ratio']:.3f} ({1 / ratio['high']:.3f}–{1 / ratio['low']:.3f})" in text


def test_the_comment_leaves_arms_no_verdict_names_to_the_full_report(whole_report):
    from pool_fusion_tuning.reports.comment import render_comment

    long = {**whole_report, "command": "tune " + "--case channels=16 " * 30}
    text = render_comment(long)
    rows = _check_comment(text)
    assert len(rows) < len(whole_report["arms"])
    left = len(whole_report["arms"]) - len(rows)
    assert f"{left} more arm" in text
    for named in ("`fixed`", "`torch-compile+capture`", "`one-kernel+capture`"):
        assert any(row.startswith(f"| {named} |") for row in rows), named


def test_the_comment_of_a_cpu_run_has_no_gpu_column(tmp_path):
    from pool_fusion_tuning.reports.comment import render_comment

    run = _write_run(
        tmp_path / "run", "llvm", CPU_FIGURES, list(CPU_FIGURES), host_bound=set(CPU_FIGURES)
    )
    text = render_comment(summarize_run(run))
    _check_comment(text)
    assert "| arm | end to end, us | / ON (95% CI) |" in text
    assert "a GPU rule: on llvm it builds what ON builds" in text
    assert "GPU time" not in text and "fused kernel" not in text
    assert "cannot be told apart" in text  # fixed is on, on llvm
    assert "The issue's slowdown" in text  # room for it without PyTorch's sentences


def test_the_wall_time_section_says_where_each_tuner_and_trial_spent_its_time():
    from pool_fusion_tuning.reports.markdown import wall_text

    optuna = {"wall_s": 80.4, "time_spent": {"build_cpu_s": 410.2, "asks": 690, "ask_s": 21.5}}
    ms_run = {"wall_s": 120.0, "time_spent": {"build_cpu_s": 300.0, "search_s": 61.2}}
    trial = {
        "startup_s": 5.1,
        "compiler_import_s": 6.5,
        "waited_s": 120.0,
        "load_s": {"on": 0.1, "fixed": 0.2},
        "check_s": 1.5,
        "timing_s": 20.0,
        "timing_by_arm_s": {"on": 12.0, "fixed": 8.0},
    }
    report = {
        "phase_wall_s": {"tuning": 120.6, "comparison": 60.2},
        "wall_s": 190.0,
        "tuners": {
            "optuna": optuna,
            "metaschedule": {**ms_run, "runs": {"ms-space": ms_run}},  # its runs hold it
            "ms-space": ms_run,
        },
        "trial_wall_s": [trial, {**trial, "timing_by_arm_s": {"on": 10.0, "fixed": 9.0}}],
    }
    text = "\n".join(wall_text(report))
    assert "|  | `optuna` | `ms-space` |" in text  # the combined summary is not repeated
    assert "| wall time | 80.4 | 120.0 |" in text
    building = "building: CPU seconds of the builder processes, their compiler included"
    assert f"| {building} | 410.2 | 300.0 |" in text
    assert "| asks | 690 | — |" in text
    assert "| MetaSchedule's own work: search, cost model, database (derived: its wall " in text
    assert "less the builder's and the callbacks') | — | 61.2 |" in text
    assert "|  | trial 0 | trial 1 |" in text
    assert "| loading the arms' libraries | 0.3 | 0.3 |" in text
    assert "| warm-up |" not in text  # not recorded: no row
    assert "summed over trials: `on` 22.0 s, `fixed` 17.0 s." in text
    # a run recorded before these were kept: only the phases
    assert "Where each" not in "\n".join(wall_text({**report, "tuners": {}, "trial_wall_s": []}))


def test_the_report_names_the_rule_the_run_put_window_reduction_before(default_report):
    """Recorded with the fixed arm; a run recording none ran it before GeneralReduction."""
    from pool_fusion_tuning.baselines.arms import ARMS

    assert ARMS["fixed"].describe()["rule_before"] == "Reduction"
    assert "`WindowReduction` before `GeneralReduction`" in render(default_report)
    text = render({**default_report, "fixed_rule_before": "Reduction"})
    assert "`WindowReduction` before `Reduction`" in text and "GeneralReduction" not in text


def test_the_report_says_which_arms_masked_their_loads(tmp_path, whole_report):
    """The report notes the arms with masked loads; an older run recording none gets no note."""
    from pool_fusion_tuning.baselines.arms import ARMS

    note = "after scheduling, each guarded block that writes a register runs unguarded"
    assert note not in render(whole_report)
    run = _write_run(tmp_path / "run", "cuda", WHOLE_FIGURES, ["on", "one-kernel"])
    run.update_meta(arms=[ARMS["on"].describe(), ARMS["one-kernel"].describe()])
    text = render(summarize_run(run))
    assert f"`one-kernel`: {note}" in text and "`on`: after" not in text
