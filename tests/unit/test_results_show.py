"""`rigbench results show ID` for every kind of stored trial (speed, training run, range test,
max-batch probe, data parallel, a GPU trial with energy): the fields with a value, grouped and
rounded, per-epoch lists summarised, no line padded to the terminal's width, stored text
literal and bounded. No trial runs: the Results are built here."""

import re

import pytest
from rich.console import Console
from typer.testing import CliRunner

from rigbench import cli
from rigbench.metrics import METRIC_NAMES
from rigbench.rank_record import RankRecord
from rigbench.reports.trial_detail import EPOCH_ROWS, result_detail
from rigbench.reports.trial_fields import ELSEWHERE, ERROR_LINES, GROUPS, metric_groups, per_epoch
from rigbench.spec import EpochRecord, LrFindOptions, Metrics, Result, TrialSpec
from rigbench.store import Store
from tests.unit.test_report_data import make_result, train_result

MACHINE = {"hostname": "box", "cpu_model": "AMD EPYC 7B13", "cpu_cores_logical": 2, "ram_bytes": 24 * 2**30,
           "os": "Linux-6.1", "python_version": "3.11.7",
           "gpus": [{"name": "NVIDIA H200", "memory_bytes": 141 * 2**30, "driver": "580.159.04"}]}


def render(result: Result, width: int = 200, machine: dict | None = None) -> list[str]:
    console = Console(width=width, record=True, markup=False)
    console.print(result_detail(result, machine or MACHINE, more="rigbench results show 1 --json"))
    return console.export_text().splitlines()


def show(tmp_path, *results: Result) -> list[str]:
    """`rigbench results show` of each result stored in a fresh database, as a pipe gets it."""
    db = str(tmp_path / "show.db")
    store = Store(db)
    store.add_run("r1", "2026-01-01T00:00:00+00:00", "rigbench run", MACHINE)
    outputs = []
    for r in results:
        trial_id = store.add_result(r.model_copy(update={"id": None, "run_id": "r1"}))
        shown = CliRunner().invoke(cli.app, ["results", "show", str(trial_id), "--db", db], env={"COLUMNS": "200"})
        assert shown.exit_code == 0, shown.output
        outputs.append(shown.stdout)
    return outputs


def value(lines: list[str], label: str) -> str:
    """The value on the row of `label` (its first line)."""
    [row] = [line for line in lines if line.split()[:1] == [label]]
    return row.split(None, 1)[1] if len(row.split()) > 1 else ""


def training_run(epochs: int = 3) -> Result:
    accuracies = tuple(0.5 + 0.4 * i / max(1, epochs - 1) for i in range(epochs))
    r = train_result(0.05, accuracies=accuracies)
    r.metrics.eval_loss_per_epoch = [1.0 / (i + 1) + 0.123456789 for i in range(epochs)]
    for record, loss in zip(r.epoch_records, r.metrics.eval_loss_per_epoch, strict=True):
        record.eval_loss = loss
    r.loss_curve = [2.3 - 0.01 * i for i in range(100)]
    return r


def lr_range_test() -> Result:
    spec = TrialSpec(kind="lr_find", workload="mlp", batch_size=64,
                     lr_find=LrFindOptions(dataset="digits", steps=30))
    curve = [(1e-6 * 1.5 ** i, 2.3 - 0.02 * i, 2.3 - 0.02 * i) for i in range(20)]
    curve += [(1e-6 * 1.5 ** (20 + i), 3.0 + 10 * i, 2.0 + 10 * i) for i in range(7)]
    return Result(id=3, run_id="r1", created_at="2026-01-01T00:00:00+00:00", spec=spec, status="ok",
                  metrics=Metrics(suggested_lr=0.000221, dataset="digits", final_loss=4207.95), lr_curve=curve)


def gpu_trial() -> Result:
    return make_result(device="cuda:0", workload="gpt", options={"preset": "small"}, speed=451.693423,
                       gpu_util_pct_mean=99.8788, gpu_mem_peak_mib=73596.0, energy_j=2273.84, gpu_energy_j=2273.84,
                       energy_per_sample_j=1.54473, gpu_power_w_mean=666.668, energy_method="gpu: nvml-counter",
                       flops_per_sample=8.75167e11, tokens_per_s=462534.1)


def test_a_training_run_summarises_its_per_epoch_lists_and_tables_its_epochs(tmp_path):
    [out] = show(tmp_path, training_run())
    lines = out.splitlines()
    assert "[0.5" not in out and "0.123456789" not in out  # no raw Python lists of floats
    assert value(lines, "accuracy_per_epoch") == "3 epochs: 50.0% → 90.0% (best 90.0%, epoch 3)"
    assert value(lines, "eval_loss_per_epoch") == "3 epochs: 1.123 → 0.4568 (lowest 0.4568, epoch 3)"
    assert value(lines, "final_accuracy") == "90.0%"
    assert value(lines, "loss_curve") == "training loss, 100 points: 2.3 → 1.31"
    assert lines[0] == "trial 1: mlp torch cpu b32 fp32 lr=0.05 (training run): ok"
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["epoch", "steps", "train"])
    assert lines[header - 1] == "  per epoch:" and lines.index("training") < header < lines.index("model and data")
    assert [line.split()[:5] for line in lines[header + 2:header + 5]] == [
        ["1", "40", "1.0000", "1.1235", "50.0%"], ["2", "40", "0.5000", "0.6235", "70.0%"],
        ["3", "40", "0.3333", "0.4568", "90.0%"]]
    assert "input s" not in lines[header]  # resident data: no loader times to show


def test_a_long_training_run_shows_some_epochs_and_says_where_every_one_is():
    r = training_run(epochs=40)
    lines = render(r)
    heading = next(line for line in lines if line.startswith("  per epoch ("))
    assert heading == f"  per epoch ({EPOCH_ROWS} of 40, spread out; every epoch: rigbench results show 1 --json):"
    assert len([line for line in lines if line.startswith("  ") and line.split()[0].isdigit()]) == EPOCH_ROWS
    assert value(lines, "accuracy_per_epoch").startswith("40 epochs: 50.0% → 90.0%")


def test_no_line_is_padded_with_spaces_to_the_terminals_width(tmp_path):
    r = make_result(status="crash", error="RuntimeError: " + "x" * 500)
    for out in show(tmp_path, make_result(), training_run(), r, gpu_trial()):
        lines = out.splitlines()
        assert [line for line in lines if line != line.rstrip()] == []
        assert max(map(len, lines)) <= 200


@pytest.mark.parametrize("width", (60, 80, 120))
def test_every_line_fits_the_width_and_long_values_fold(width):
    r = make_result(status="crash", error="RuntimeError: " + "x" * 300, energy_note="cpu: " + "why " * 60)
    lines = render(r, width)
    assert max(map(len, lines)) <= width
    assert sum("xxxx" in line for line in lines) > 1  # the error folded onto more lines, not cut


def test_a_speed_trial_lists_only_its_fields_and_says_how_to_see_them_all(tmp_path):
    [out] = show(tmp_path, make_result(workload="mlp"))
    lines = out.splitlines()
    rows = [line for line in lines if line.startswith("  ")]
    assert not [line for line in rows if line.split()[-1] == "-"]  # no field without a value
    for absent in ("accuracy_per_epoch", "final_accuracy", "epochs", "suggested_lr", "gpu_energy_j",
                   "straggler_ratio", "allreduce_table", "error", "workload_options", "world_size"):
        assert absent not in [line.split()[0] for line in rows], absent
    assert len(rows) < 40
    last = " ".join(out[out.rindex("\n", 0, out.index(" fields with no value")):].split())  # it may fold
    assert re.fullmatch(r"\d+ fields with no value for this trial are left out; every field, the raw samples "
                        rf"included: rigbench results show \d+ --json --db {tmp_path}/show.db", last)


def test_floats_are_rounded_in_their_units():
    r = make_result(speed=641.5561234, step_time_ms_median=99.757421, step_time_cv=0.154652, noisy=True,
                    cpu_util_pct_mean=50.09153, first_step_s=0.1545221, flops_per_sample=5.68771e7,
                    bytes_per_sample=2.07167e6, params=10020874, dataset_size=60000, epoch_seconds=19535.2,
                    comm_share=0.198689)
    lines = render(r)
    assert not [line for line in lines if re.search(r"\d\.\d{5,}", line)]
    assert value(lines, "samples_per_s") == "642 [577–770] samples/s (95% CI) noisy"
    assert value(lines, "step_time_ms_median") == "99.8 ms"
    assert value(lines, "step_time_cv") == "0.1547 (noisy)" and value(lines, "noisy") == "yes"
    assert value(lines, "cpu_util_pct_mean") == "50.1%"
    assert value(lines, "flops_per_sample") == "56.9 MFLOP"
    assert value(lines, "bytes_per_sample") == "2.07 MB (an early estimate: fp32 bytes, attention unfused)"
    revised = r.model_copy(update={"metrics": r.metrics.model_copy(update={"bytes_estimate_revision": 2})})
    assert value(render(revised), "bytes_per_sample") == "2.07 MB (estimate revision 2: at the trial's precision)"
    assert not [line for line in render(revised) if "bytes_estimate_revision" in line]  # said in its row
    assert value(lines, "params") == "10,020,874 parameters"
    assert value(lines, "epoch_seconds") == "19,535 s (5:25:35)"


def test_fields_are_grouped_under_headings_in_order():
    lines = render(gpu_trial())
    headings = [line for line in lines if line and not line.startswith(" ") and ":" not in line]
    assert headings[:8] == ["trial", "setup", "speed", "model and data", "resources", "energy", "software", "machine"]
    assert value(lines, "energy_per_sample_j") == "1.54 J/sample (0.647 samples/J)"
    assert value(lines, "tokens_per_s") == "462,534 tokens/s"
    assert value(lines, "gpu_mem_peak_mib") == "73,596 MiB"
    assert value(lines, "gpu") == "NVIDIA H200 141.0 GiB driver 580.159.04"
    assert value(lines, "cpu") == "AMD EPYC 7B13, 2 logical cores" and value(lines, "ram") == "24.0 GiB"
    assert value(lines, "workload_options") == "preset=small"


def test_every_metric_has_a_heading():
    placed = [name for _, names in GROUPS for name in names] + list(ELSEWHERE)
    assert sorted(placed) == sorted(METRIC_NAMES)


def test_a_metric_without_a_heading_is_still_shown(monkeypatch):
    import rigbench.reports.trial_fields as fields

    monkeypatch.setattr(fields, "GROUPS", fields.GROUPS[1:])  # as if "speed" were forgotten
    groups = dict(metric_groups(make_result(speed=100.0)))
    assert "samples_per_s" in [label for label, _ in groups["other"]]


def test_a_range_test_says_its_suggestion_and_curve_in_lines(tmp_path):
    [out] = show(tmp_path, lr_range_test())
    lines = out.splitlines()
    assert lines[0].endswith("(learning-rate range test): ok")
    assert value(lines, "suggested_lr") == "0.000221"
    curve = value(lines, "lr_curve")
    assert curve.startswith("27 steps, lr 1e-06 to ") and "minimum smoothed loss" in curve and "stopped:" in curve
    assert "[1e-06" not in out  # the curve itself is in --json
    section = lines.index("learning-rate range test")
    assert lines[section + 1].split()[0] in ("suggested_lr", "final_loss")
    assert "speed" not in lines  # its last loss goes with the range test, not under a speed heading


def test_a_data_parallel_trial_shows_its_figures_and_ranks(tmp_path):
    r = make_result(workload="mlp", global_batch=128, comm_share=0.171, straggler_ratio=1.02,
                    allreduce_table=[[4096.0, 2e-5, 1e9], [4e7, 1e-3, 4e10]], replicas_identical=True)
    r.spec = r.spec.model_copy(update={"world_size": 2})
    r.ranks = [RankRecord(rank=k, host="node", status="ok", steps=10, step_time_ms_mean=12.3,
                          step_time_ms_median=12.0, param_digest="ab" * 32, comm_share=0.1987) for k in range(2)]
    [out] = show(tmp_path, r)
    lines = out.splitlines()
    assert value(lines, "comm_share") == "17.1%" and value(lines, "replicas_identical") == "yes"
    assert value(lines, "global_batch") == "128 samples"
    assert value(lines, "allreduce_table").startswith("2 message sizes, 4.0 KiB to 38.1 MiB")
    under = lines.index("data parallel")
    assert "  its 2 ranks:" in lines[under:]  # its ranks' table, under its data-parallel figures
    assert lines.index("  its 2 ranks:") < next(i for i, line in enumerate(lines) if line == "roofline" or i > under + 30)
    assert "19.9%" in out and "0.1987" not in out  # each rank's comm share in the field's unit


def test_stored_text_is_literal_and_a_long_error_shows_its_end():
    error = "Traceback (most recent call last):\n" + "  frame [bold]\n" * 2000 + "RuntimeError: [/] out of [red]memory"
    r = make_result(status="crash", error=error, speed=None)
    text = "\n".join(render(r))
    assert "RuntimeError: [/] out of [red]memory" in text
    assert len(text.splitlines()) < ERROR_LINES + 60
    assert "characters before this: --json has the whole error" in text


def test_per_epoch_counts_epochs_without_a_figure():
    assert per_epoch([0.5, None, 0.9], "{:.1%}".format, highest=True) == "3 epochs: 50.0% → 90.0%; 1 without a figure"
    assert per_epoch([0.5], "{:.1%}".format, highest=True) == "1 epoch: 50.0%"
    assert per_epoch([None, None], "{:.1%}".format, highest=True) == "2 epochs, none with a figure"


def test_a_gan_epoch_table_has_its_own_losses_and_no_accuracy():
    r = training_run()
    r.epoch_records = [EpochRecord(epoch=i + 1, steps=10, train_loss=1.0, train_seconds=1.0, eval_seconds=0.1,
                                   extra={"loss_d": 0.69, "loss_g": 2.1}) for i in range(2)]
    lines = render(r)
    header = next(line for line in lines if line.startswith("  epoch "))
    assert header.split() == ["epoch", "steps", "train", "loss", "loss_d", "loss_g", "train", "s", "eval", "s"]
    assert value(lines, "final_extra") == "loss_d 0.69, loss_g 2.1"


def test_one_epoch_is_counted_in_the_singular():
    # `results show --json`'s raw rows and the report's hover read "1 epochs"
    from rigbench.reports.training_charts import _train_hover
    from rigbench.reports.trial_fields import raw_rows

    one, three = training_run(1), training_run(3)
    assert dict(raw_rows(one))["epoch_records"] == "1 epoch" and dict(raw_rows(three))["epoch_records"] == "3 epochs"
    one.metrics.epochs, one.metrics.train_seconds, one.metrics.eval_seconds = 1, 2.0, 0.5
    assert "1 epoch, 2.0 s training" in _train_hover(one, "90%")
