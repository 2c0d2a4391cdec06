"""Every table fits the terminal (issue 23 item 11): at 80 and 120 columns no line is wider and
no row wraps onto a second line; columns are abbreviated, then left out by priority, and a
footnote says which. Intervals are shown as measured (item 10) and trials carry their framework
(item 12). Tables are built from Result objects and rendered with rich, no trial runs."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from rich.console import Console

from rigbench.analysis.compare import compare_results
from rigbench.analysis.frameworks import FrameworkRow, FrameworkTable
from rigbench.analysis.process_scaling import ProcessRow
from rigbench.analysis.published_tables import published_rows
from rigbench.analysis.roofline import result_roofline
from rigbench.analysis.scaling import scaling_table
from rigbench.analysis.score import Score, ScoreItem
from rigbench.analysis.specs import all_specs
from rigbench.api.info import workloads_info
from rigbench.cli.advise import lr_curve_table, process_scaling_view, scaling_table_view
from rigbench.cli.specs import specs_table
from rigbench.cli.sweep import _sweep_table
from rigbench.experiments.max_batch import MaxBatchOutcome
from rigbench.rank_record import RankRecord
from rigbench.reports import compare_tables, terminal
from rigbench.reports.html import _trial_row
from rigbench.reports.table_fit import CUT_MIN, Column, FitTable
from rigbench.reports.terminal import max_batch_table
from rigbench.spec import Metrics, Result, TrialSpec

WIDTHS = (80, 120)
FRAMEWORKS = ("torch", "jax", "tensorflow", "keras-jax", "keras-torch")
CALIBRATION = {"created_at": "2026-01-02T00:00:00+00:00", "matmul_flops": {"fp32": 2e11, "bf16": 4e11},
               "memory_bandwidth_bytes_s": 3.3e10, "unsupported": {}}


def trial(i: int, framework: str = "torch", status: str = "ok", **spec: object) -> Result:
    """A stored-looking trial with every column filled: a long workload name, a GPU, noise."""
    spec = {"workload": "resnet", "workload_options": {"depth": 56}, "device": "cuda:0", "batch_size": 1024,
            "precision": "bf16", "threads": 16, "compile": True, "framework": framework, **spec}
    metrics = Metrics(samples_per_s=548.6, samples_per_s_ci=(470.0, 1424.0), noisy=True, step_time_ms_median=1866.25,
                      cpu_util_pct_mean=99.5, gpu_util_pct_mean=87.5, rss_peak_mib=12345.0, gpu_mem_peak_mib=65432.0,
                      flops_per_sample=3.5e9, params=855_770, bytes_per_sample=2e7 if framework == "torch" else None,
                      dataset="cifar10", epochs=30, final_accuracy=0.9123, best_accuracy=0.9201, target_accuracy=0.9,
                      seconds_to_target=12345.6, epochs_to_target=27, train_seconds=23456.7, eval_seconds=345.6,
                      input_fraction=0.123, energy_per_sample_j=0.0123)
    times = [0.1 + 0.001 * (k % 7) for k in range(20)]
    return Result(id=1000 + i, run_id=f"run{i % 2}", created_at="2026-01-01T00:00:00+00:00", spec=TrialSpec(**spec),
                  status=status, error=None if status == "ok" else "RuntimeError: " + "x" * 300,
                  device_name="NVIDIA H100 80GB HBM3", threads=16, metrics=metrics, software={"torch": "2.13.0"},
                  step_times_s=times if status == "ok" else [])


def trials() -> list[Result]:
    return [trial(i, f, status=s) for i, (f, s) in enumerate(
        [(f, "ok") for f in FRAMEWORKS] + [("keras-torch", "unsupported")])]


def ranked() -> Result:
    r = trial(0)
    r.ranks = [RankRecord(rank=k, host="node-with-a-long-hostname", status="ok", steps=120, step_time_ms_mean=123.456,
                          step_time_ms_median=120.5, nosync_step_time_ms_median=99.9, comm_share=0.171,
                          allocator_peak_mib=4096.0, rss_peak_mib=8192.0, cpu_util_pct=97.5, param_digest="ab" * 32)
               for k in range(4)]
    return r


def calibration() -> dict:
    sizes = [{"n": n, "iterations": 3, "flops_per_s": 1e11} for n in (512, 1024, 2048, 4096, 8192)]
    return {"device": "cuda:0", "device_name": "NVIDIA H100 80GB HBM3", "threads": None, "measurements": [
        {"kind": "matmul", "precision": "fp32", "status": "ok", "value": 5.1e13, "unit": "FLOP/s",
         "detail": {"peak_n": 8192, "sizes": sizes, "repeats": 5}},
        {"kind": "matmul", "precision": "tf32", "status": "unsupported", "value": None, "unit": "FLOP/s",
         "detail": {"reason": "tf32 is an NVIDIA GPU format (Ampere and later); not on this device: " + "y" * 80}},
        {"kind": "memory_bandwidth", "precision": None, "status": "ok", "value": 3.0e12, "unit": "B/s",
         "detail": {"buffer_bytes": 2**30, "repeats": 5}},
        {"kind": "h2d_pinned", "precision": None, "status": "n/a", "value": None, "unit": "B/s", "detail": {}}]}


def published_matches() -> list:
    rows = published_rows()[:3]
    ours = trial(0, "tensorflow")
    return [SimpleNamespace(row=row, ours=ours, ours_device=ours.device_name, ours_steps_per_s=12.3456, ours_trials=[ours.id],
                            ours_cpu_pct=ours.metrics.cpu_util_pct_mean, measured=6.123, paper_ratio=2.84,
                            predicted=8.14, predicted_by_clock={"max_turbo": 8.14, "base": 18.0}, normalised=1.95)
            for row in rows]


def framework_rows() -> FrameworkTable:
    def row(framework: str, source: str = "ours") -> FrameworkRow:
        return FrameworkRow(source, "cnn", framework, "cuda:0", "NVIDIA GeForce GTX 1060 6GB", "gpu", 128, 12.345,
                            98.7, 87.6, 1234.0, 2345.0, 1001)
    return FrameworkTable("cnn", 128, [row(f) for f in FRAMEWORKS],
                          [row("PyTorch 1.4.0", "yin2020"), row("TensorFlow 2.1.0", "yin2020")], list(FRAMEWORKS), [64])


def score() -> Score:
    items = [ScoreItem(w, 64, (trial(0, framework="jax", workload=w),), (trial(1, framework="jax", workload=w),), 1.234)
             for w in ("mlp", "autoencoder", "catsdogs")]
    return Score("gpu", 1.234, (1.1, 1.4), items)


def process_rows() -> list[ProcessRow]:
    return [ProcessRow(n, 64, 64 * n, "ok" if n < 8 else "crash", None if n < 8 else "RuntimeError: " + "z" * 200,
                       2000 + n, 1234.5 * n, (1100.0 * n, 1400.0 * n), 1.9 * n / 2, 0.95, (0.9, 0.99), 1300.0 * n,
                       0.97, 0.12, 1.05, 3.4) for n in (1, 2, 4, 8)]


def max_batch() -> MaxBatchOutcome:
    probes = [trial(i, batch_size=2 ** (i + 3)) for i in range(8)]
    return MaxBatchOutcome("resnet:depth=56", "cuda:0", "bf16", 80 * 2**30, probes, 512, 1024, 1e9, 1e7, 460, 0.1,
                           "r1", memory_metric="gpu_mem_peak_mib")


def lr_summary() -> dict:
    curve = [[1e-6 * 1.2 ** k, 2.3 - k * 0.001, 2.3 - k * 0.001] for k in range(100)]
    return {"lr_at_min": curve[50][0], "curve": curve}


def pairs() -> list:
    a = [trial(i, f) for i, f in enumerate(FRAMEWORKS)]
    b = [trial(i + 10, f).model_copy(update={"run_id": "b"}) for i, f in enumerate(FRAMEWORKS)]
    return compare_results(a, b, same_machine=True, across_versions=True).pairs


#: Every table a command prints, built from its own builder (name: what builds it).
TABLES = {
    "run / results list": lambda: terminal.results_table(trials(), title="run abc123"),
    "train": lambda: terminal.train_table(trials()),
    "run: speed-ups": lambda: terminal.speedup_table([{"workload_label": "resnet:depth=56", "framework": f,
                                                       "device": "cuda:0", "batch_size": 1024, "precision": "bf16",
                                                       "speedup": 123.456, "trials": [1, 2, 3],
                                                       "base_trials": [4, 5, 6]} for f in FRAMEWORKS]),
    "workloads": lambda: terminal.workloads_table(workloads_info()),
    "devices": lambda: terminal.devices_table([
        {"id": "cpu", "kind": "cpu", "name": "AMD EPYC 7B13 64-Core Processor with a long name",
         "memory_bytes": 24 * 2**30, "frameworks": list(FRAMEWORKS)},
        {"id": "cuda:0", "kind": "cuda", "name": "NVIDIA H100 80GB HBM3", "memory_bytes": 80 * 2**30,
         "frameworks": []}]),
    "results show: ranks": lambda: terminal.ranks_table(ranked()),
    "calibrate": lambda: terminal.calibration_table(calibration()),
    "roofline": lambda: terminal.roofline_table([(r, result_roofline(r, CALIBRATION)) for r in trials()]),
    "compare A B": lambda: compare_tables.pairs_table(pairs()),
    "compare --published": lambda: compare_tables.published_table(published_matches()),
    "compare --frameworks": lambda: compare_tables.framework_table(framework_rows()),
    "score": lambda: compare_tables.score_table(score()),
    "specs": lambda: specs_table(all_specs()),
    "sweep": lambda: _sweep_table(trials(), new_run="run0"),
    "max-batch": lambda: max_batch_table(max_batch()),
    "lr-find": lambda: lr_curve_table(lr_summary()),
    "scaling": lambda: scaling_table_view(scaling_table([trial(0, threads=None, compile=False, precision="fp32"),
                                                         trial(1, threads=2, compile=False, precision="fp32"),
                                                         trial(2, "torch", "crash", threads=1, compile=False,
                                                               precision="fp32")]), "t"),
    "scaling --processes": lambda: process_scaling_view(process_rows(), "t"),
}


def render(renderable: object, width: int) -> list[str]:
    console = Console(width=width, record=True, markup=False)
    console.print(renderable)
    return console.export_text().splitlines()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", list(TABLES))
def test_every_table_fits_and_keeps_each_row_on_one_line(name, width):
    table = TABLES[name]()
    lines = render(table, width)
    assert max(map(len, lines)) <= width, "\n".join(lines)
    body, _ = table.fitted(width)
    body.title = None  # a long title may wrap; a row may not
    sections = sum(row.end_section for row in table.rows[:-1])
    assert len(render(body, width)) == 2 + len(table.rows) + sections, "\n".join(lines)


@pytest.mark.parametrize("width", WIDTHS)
def test_results_show_folds_long_values_within_the_width(width):
    r = trial(0, status="crash")
    lines = render(terminal.result_detail(r, {"cpu_model": "AMD EPYC " * 20, "gpus": []},
                                          roofline=result_roofline(r, CALIBRATION)), width)
    assert max(map(len, lines)) <= width
    assert sum("x" in line for line in lines) > 1  # the 300-character error folded, not cut


def test_a_table_wide_enough_is_shown_whole():
    table = terminal.results_table(trials())
    lines = render(table, 250)
    assert "not shown" not in "\n".join(lines)
    assert lines[0].split() == ["id", "workload", "framework", "device", "batch", "prec", "setup", "samples/s",
                                "[95%", "CI]", "step", "ms", "CPU", "%", "GPU", "%", "RSS", "MiB", "GPU", "MiB",
                                "status"]


def test_short_forms_come_first_then_the_lowest_priority_goes_and_the_footnote_says_so():
    table = FitTable([Column("name"), Column("framework", priority=80, short="fw", abbreviate=lambda t: t[:2]),
                      Column("wide", priority=10), Column("wider", priority=20), Column("empty", priority=90)],
                     more="--json")
    table.add_row("a" * 10, "tensorflow", "w" * 20, "v" * 20, "-")
    assert table.layout(80)[:4] == ([0, 1, 2, 3, 4], False, [], set())
    assert table.layout(72)[:3] == ([0, 1, 2, 3, 4], True, [])  # "fw" and "te" make it 65 wide
    assert table.layout(60)[:3] == ([0, 1, 2, 3], True, [4])  # then the empty column goes first
    assert table.layout(45)[:3] == ([0, 1, 3], True, [2, 4])  # then the lowest priority
    assert table.layout(20)[:3] == ([0, 1], True, [2, 3, 4])
    footnote = " ".join(line.strip() for line in render(table, 45)[3:])
    assert footnote == "not shown at 45 columns: wide, empty (a wider terminal or --json shows them)."


def test_of_equal_priorities_the_column_with_more_dashes_yields_first():
    table = FitTable([Column("id"), Column("spec", priority=50), Column("calibrated", priority=50)])
    table.add_row("1", "3.2%", "-")
    table.add_row("2", "2.4%", "-")
    table.add_row("3", "1.1%", "9.9%")
    assert table.layout(16).dropped == [2]  # "calibrated" has a value in one row, "spec" in every row
    table = FitTable([Column("id"), Column("calibrated", priority=50), Column("spec", priority=50)])
    table.add_row("1", "-", "3.2%")
    table.add_row("2", "9.9%", "2.4%")
    assert table.layout(16).dropped == [1]  # whichever side it is on


def test_a_brief_form_comes_at_its_priority_before_higher_columns_go():
    table = FitTable([Column("id"), Column("batch", priority=75), Column("prec", priority=60),
                      Column("samples/s [95% CI]", "right", short="samples/s",
                             brief=lambda text: text.split(" [")[0], brief_priority=45,
                             brief_note="the 95% CI of samples/s"),
                      Column("step ms", priority=40)], more="--json")
    table.add_row("91", "32", "bf16", "459 [454–463]", "69.74")
    table.add_row("92", "64", "bf16", "486 [477–491]", "131.76")
    layout = table.layout(29)
    assert layout.shown == [0, 1, 2, 3] and layout.briefed == {3} and layout.dropped == [4]
    lines = render(table, 29)
    assert "486" in lines[3] and "[" not in lines[3] and "64" in lines[3]
    note = " ".join(" ".join(lines[4:]).split())
    assert note == "not shown at 29 columns: the 95% CI of samples/s, step ms (a wider terminal or --json shows them)."
    assert table.layout(60).briefed == set()  # wide enough: the interval stays


def test_free_text_is_cut_with_an_ellipsis_never_left_out():
    table = FitTable([Column("id", "right"), Column("note", priority=10, cut=True), Column("x", priority=50)])
    table.add_row("1", "n" * 100, "y" * 20)
    shown, short, dropped, shrunk, _ = table.layout(60)
    assert shown == [0, 1, 2] and dropped == [] and shrunk == {1}
    lines = render(table, 60)
    assert lines[2].endswith("…") or "…" in lines[2]
    assert max(map(len, lines)) <= 60 and "was cut to fit" in lines[-1]
    assert table.layout(1 + 2 + CUT_MIN + 2 + 19)[2] == [2]  # below the cut's least width the next column goes


def test_stored_text_stays_literal_when_fitted():
    r = trial(0, status="oom").model_copy(update={"error": "[bold]x[/bold]"})
    r.spec.workload_options = {"tag": "[/]"}
    text = "\n".join(render(terminal.results_table([r]), 80))
    assert "resnet:tag=[/]" in text


# --------------------------------------------------------------------------- item 10: intervals


def test_an_asymmetric_interval_is_shown_as_measured_never_as_plus_minus():
    r = trial(0)
    assert terminal.speed(r) == "549 [470–1,424] noisy"
    assert _trial_row(r)["speed"] == "549 [470–1,424]"
    assert terminal.interval(67.45, (61.2, 73.61)) == "67.5 [61.2–73.6]"
    assert terminal.interval(None, None) == "-"
    for name, build in TABLES.items():
        text = "\n".join(render(build(), 120))
        assert "±" not in text, name
    rows = {line.split()[0]: line for line in render(process_scaling_view(process_rows(), "t"), 200)[3:]}
    assert "1,234 [1,100–1,400]" in rows["2001"] and "[0.90" not in rows["2001"]  # one process: no CI
    assert "0.95 [0.90–0.99]" in rows["2002"]


# --------------------------------------------------------------------------- item 12: framework


@pytest.mark.parametrize("name", ["run / results list", "roofline", "compare --published", "sweep", "compare A B",
                                  "run: speed-ups", "train", "score"])
def test_trials_are_listed_with_their_framework(name):
    table = TABLES[name]()
    cells = [c.plain for c in table.cells("framework")]
    assert set(cells) & {"tensorflow", "jax"}, cells
    wide = "\n".join(render(table, 250))
    narrow = "\n".join(render(table, 80))
    if "tensorflow" in cells:
        assert "tensorflow" in wide and (" tf " in narrow or "tensorflow" in narrow)
    if "keras-torch" in cells:
        assert "keras-torch" in wide and (" k-torch " in narrow or "keras-torch" in narrow)


def test_framework_abbreviations_are_defined_once():
    assert [terminal.framework_short(f) for f in FRAMEWORKS] == ["torch", "jax", "tf", "k-jax", "k-torch"]


@pytest.mark.parametrize("width", WIDTHS)
def test_commands_print_within_the_terminal_width(tmp_path, monkeypatch, width):
    """`results list`, `roofline` and `compare` through the CLI on a terminal `width` wide."""
    from typer.testing import CliRunner

    from rigbench import cli
    from rigbench.store import Store

    monkeypatch.setenv("COLUMNS", str(width))  # the terminal's width, also into CliRunner's pipe
    store = Store(str(tmp_path / "t.db"))
    for run_id in ("run0", "run1"):
        store.add_run(run_id, "2026-01-01T00:00:00+00:00", "rigbench run", {"hostname": "box", "cpu_model": "CPU"})
        for r in trials():
            store.add_result(r.model_copy(update={"id": None, "run_id": run_id}))
    for args in (["results", "list"], ["roofline"], ["compare", "run0", "run1"]):
        shown = CliRunner().invoke(cli.app, [*args, "--db", store.url])
        assert shown.exit_code == 0, shown.output
        lines = shown.stdout.splitlines()
        assert max(map(len, lines)) <= width, "\n".join(lines)
        assert "k-torch" in shown.stdout or "keras-torch" in shown.stdout
