"""The scaling table: speed-ups over the fp32 eager default, from synthetic Results."""

import json

import pytest

from rigbench import api
from rigbench.analysis.scaling import scaling_table, shi2016_column
from rigbench.experiments import devices as experiment_devices
from rigbench.spec import Metrics, Result, TrainOptions, TrialSpec

_ids = iter(range(1, 10_000))


def result(speed=100.0, status="ok", error=None, batch=64, device="cpu", ci=0.05, reported_threads=2, run="r",
           **knobs):
    """A stored-looking speed trial; `knobs` are TrialSpec fields (threads, precision, compile...)."""
    spec = TrialSpec(workload="cnn", device=device, batch_size=batch, **knobs)
    metrics = Metrics(steps_measured=10)
    if status == "ok":
        metrics = Metrics(samples_per_s=speed, samples_per_s_ci=(speed * (1 - ci), speed * (1 + ci)),
                          steps_measured=10)
    threads = knobs.get("threads") or reported_threads
    return Result(id=next(_ids), run_id=run, created_at="2026-01-01T00:00:00+00:00", spec=spec,
                  status=status, error=error, threads=threads, metrics=metrics)


def by_label(rows):
    return {r.label: r for r in rows}


def test_speedups_over_the_fp32_eager_default():
    rows = scaling_table([
        result(200.0, reported_threads=4),
        result(110.0, threads=1), result(220.0, threads=2),
        result(300.0, precision="bf16"), result(status="unsupported", precision="fp16",
                                                error="fp16 autocast is not supported on cpu"),
        result(100.0, compile=True), result(500.0, channels_last=True),
    ])
    assert [r.label for r in rows] == ["fp32 eager, default threads", "threads=1", "threads=2", "bf16",
                                       "fp16", "compile", "channels-last"]
    t = by_label(rows)
    assert t["fp32 eager, default threads"].speedup == pytest.approx(1.0)
    assert t["threads=1"].speedup == pytest.approx(0.55)
    assert t["bf16"].speedup == pytest.approx(1.5)
    assert t["compile"].speedup == pytest.approx(0.5)
    assert t["channels-last"].speedup == pytest.approx(2.5)
    # a failed variant stays in the table, with its reason and no speed-up
    assert t["fp16"].status == "unsupported" and t["fp16"].speedup is None
    assert "not supported" in t["fp16"].error
    # 220 ±5% overlaps 200 ±5% (209..231 vs 190..210); 300 does not
    assert t["threads=2"].within_noise is True and t["bf16"].within_noise is False
    assert t["threads=1"].shi2016_column == "desktop_cpu_t1 / server_cpu_t1"
    assert t["bf16"].shi2016_column is None
    rows_json = json.loads(json.dumps([r.row() for r in rows]))  # `rigbench scaling --json`
    assert rows_json[3]["samples_per_s_ci"] == [285.0, 315.0] and rows_json[4]["speedup"] is None


def test_trials_changing_two_knobs_or_training_runs_are_not_variants():
    base = result(200.0)
    two = result(400.0, precision="bf16", compile=True)
    train = result(50.0, threads=1)
    train.spec = train.spec.model_copy(update={"kind": "train", "train": TrainOptions(dataset="digits", epochs=1)})
    assert [r.label for r in scaling_table([base, two, train])] == ["fp32 eager, default threads"]


def test_no_baseline_no_table_and_the_newest_run_wins():
    assert scaling_table([result(300.0, precision="bf16")]) == []
    rows = scaling_table([result(100.0, run="a"), result(150.0, precision="bf16", run="a"),
                          result(200.0, run="b"), result(300.0, precision="bf16", run="b")])
    assert [(r.label, r.samples_per_s, r.speedup, len(r.trial_ids)) for r in rows] == [
        ("fp32 eager, default threads", 200.0, 1.0, 1), ("bf16", 300.0, 1.5, 1)]


def test_repeats_in_one_run_are_one_row_whose_interval_spans_them():
    """The baseline first and last (as `rigbench scaling` runs it): 160 and 250 samples/s, each
    +-5%, make a baseline of 200 (their geometric mean) whose interval is 152..262.5. A bf16
    trial at 225 +-5% (213.75..236.25) is apart from the first baseline trial's CI (152..168) but
    within the drift the two show: within noise. 300 is outside it."""
    rows = by_label(scaling_table([result(160.0), result(225.0, precision="bf16"), result(300.0, threads=1),
                                   result(250.0)]))
    base = rows["fp32 eager, default threads"]
    assert base.samples_per_s == pytest.approx(200.0) and base.samples_per_s_trials == [160.0, 250.0]
    assert base.samples_per_s_ci == pytest.approx((152.0, 262.5))
    assert base.spread == pytest.approx(250 / 160 - 1) and base.speedup == 1.0
    assert rows["bf16"].speedup == pytest.approx(1.125) and rows["bf16"].within_noise is True
    assert rows["threads=1"].speedup == pytest.approx(1.5) and rows["threads=1"].within_noise is False
    assert rows["bf16"].spread is None  # one trial
    assert base.trial_ids[0] < rows["bf16"].trial_ids[0] < base.trial_ids[1] == base.trial_id
    # the same bf16 against the first baseline trial alone: the CIs are apart (168 < 213.75)
    alone = by_label(scaling_table([result(160.0), result(225.0, precision="bf16")]))
    assert alone["bf16"].within_noise is False
    assert json.loads(json.dumps(base.row()))["samples_per_s_trials"] == [160.0, 250.0]


def test_a_repeat_that_failed_leaves_the_ones_that_did_not():
    rows = by_label(scaling_table([result(200.0), result(status="crash", error="killed", compile=True),
                                   result(260.0, compile=True), result(200.0)]))
    assert rows["compile"].status == "ok" and rows["compile"].samples_per_s == 260.0
    assert len(rows["compile"].trial_ids) == 2 and rows["compile"].samples_per_s_trials == [260.0]


def test_a_thread_count_the_baseline_ran_with_counts_as_one_more_baseline_trial():
    """threads=2 where the framework's own count is 2 is the baseline's configuration again:
    the baseline row takes its trial (geometric mean of 200, 242 and 220: 220; CIs from 190 to
    254.1), so the spread between identical trials shows, and the repeat itself is within noise."""
    rows = by_label(scaling_table([result(200.0), result(150.0, threads=1), result(242.0, threads=2),
                                   result(220.0)]))
    base = rows["fp32 eager, default threads"]
    assert base.samples_per_s_trials == [200.0, 242.0, 220.0] and base.samples_per_s == pytest.approx(220.0)
    assert base.samples_per_s_ci == pytest.approx((190.0, 254.1)) and base.trial_id == base.trial_ids[-1]
    assert rows["threads=2"].repeats_baseline and rows["threads=2"].within_noise is True
    assert not rows["threads=1"].repeats_baseline and rows["threads=1"].speedup == pytest.approx(150 / 220)
    # a baseline whose reported thread count differs takes nothing from threads=2
    other = by_label(scaling_table([result(200.0, reported_threads=4), result(240.0, threads=2)]))
    assert other["fp32 eager, default threads"].samples_per_s_trials == [200.0]
    assert not other["threads=2"].repeats_baseline


def test_a_failed_baseline_gives_no_speedups():
    rows = scaling_table([result(status="crash", error="boom"), result(100.0, threads=1)])
    assert [r.speedup for r in rows] == [None, None]


def test_groups_by_device_and_batch():
    rows = scaling_table([result(100.0, batch=16), result(200.0, batch=64),
                          result(150.0, batch=16, threads=1), result(100.0, batch=64, threads=1)])
    assert [(r.batch_size, r.label, r.speedup) for r in rows] == [
        (16, "fp32 eager, default threads", 1.0), (16, "threads=1", 1.5),
        (64, "fp32 eager, default threads", 1.0), (64, "threads=1", 0.5)]


def test_groups_by_the_whole_configuration_but_the_knobs():
    """A variant with another lr or world size is not a variant of this baseline: its own
    group has no baseline, so it is left out."""
    rows = scaling_table([result(200.0), result(100.0, threads=1, lr=0.1),
                          result(300.0, precision="bf16", world_size=2), result(150.0, threads=1)])
    assert [(r.label, r.speedup) for r in rows] == [("fp32 eager, default threads", 1.0), ("threads=1", 0.75)]


def test_shi_columns_and_default_lists():
    assert shi2016_column(8) == "desktop_cpu_t8 / server_cpu_t8"
    assert shi2016_column(32) == "server_cpu_t32"
    assert shi2016_column(3) is None
    assert api.default_thread_counts(2) == [1, 2]
    assert api.default_thread_counts(6) == [1, 2, 4, 6]
    assert api.default_thread_counts(16) == [1, 2, 4, 8, 16]
    assert api.default_precisions("cuda:0") == ["tf32", "bf16", "fp16"]
    assert api.default_precisions("cpu") == ["bf16", "fp16"]


def test_plan_scaling_changes_one_knob_per_variant(monkeypatch):
    monkeypatch.setattr(experiment_devices, "framework_devices", lambda framework: ["cpu"])
    specs = api.plan_scaling("cnn", "cpu", threads=[1, 2], quick=True)
    base, variants = specs[0], specs[1:-1]
    assert (base.precision, base.threads, base.compile, base.channels_last) == ("fp32", None, "off", False)
    assert base.batch_size == 64 and base.measure.min_steps == 3  # --quick: small batch, short protocol
    changed = [[k for k in ("threads", "precision", "compile", "channels_last")
                if getattr(s, k) != getattr(base, k)] for s in variants]
    assert changed == [["threads"], ["threads"], ["precision"], ["precision"], ["compile"], ["channels_last"]]
    assert [s.precision for s in variants[2:4]] == ["bf16", "fp16"]
    assert specs[-1] == base and len(specs) == 8  # one round: the baseline again at the end
    assert [s.label() for s in api.plan_scaling("cnn", threads=[], precisions=[], compile=False,
                                                channels_last=False, batch_size=8)] == ["cnn torch cpu b8 fp32"]
    with pytest.raises(api.UsageError, match="fp32 is the baseline"):
        api.plan_scaling("cnn", precisions=["fp32"])


def test_compile_variants_are_the_modes_asked_or_the_devices_defaults(monkeypatch):
    """torch on CUDA tries reduce-overhead's CUDA graphs beside the default mode; a CPU, and
    the frameworks whose compiler has one mode, the default only; modes named are taken as
    named, each once, and "off" (the baseline) or a made-up mode is refused by name."""
    monkeypatch.setattr(experiment_devices, "framework_devices", lambda framework: ["cpu", "cuda:0"])

    def modes(device, framework="torch", compile=True):
        specs = api.plan_scaling("mlp", device, threads=[], precisions=[], channels_last=False,
                                 framework=framework, compile=compile, batch_size=8)
        return [s.compile for s in specs]
    assert modes("cuda:0") == ["off", "default", "reduce-overhead", "off"]
    assert modes("cpu") == ["off", "default", "off"]
    assert modes("cuda:0", framework="tensorflow") == ["off", "default", "off"]
    assert modes("cpu", compile=["max-autotune", "default", "max-autotune"]) == ["off", "max-autotune", "default", "off"]
    assert modes("cpu", compile=False) == ["off"]
    for bad in ("off", "fastest"):
        with pytest.raises(api.UsageError, match=f"--compile-mode takes default, reduce-overhead, .*got '{bad}'"):
            modes("cpu", compile=[bad])


def test_rounds_alternate_so_every_variant_sits_where_the_baseline_does_on_average(monkeypatch):
    """A steady drift cancels out of the speed-ups when each variant's mean position in the run
    equals the baseline's: baseline, A, B | B, A, baseline, and so on; an odd count ends with
    the baseline too, which measures the drift over the whole run."""
    monkeypatch.setattr(experiment_devices, "framework_devices", lambda framework: ["cpu"])
    names = {(None, "fp32"): "base", (1, "fp32"): "t1", (None, "bf16"): "bf16"}

    def order(rounds):
        specs = api.plan_scaling("mlp", "cpu", threads=[1], precisions=["bf16"], compile=False,
                                 channels_last=False, quick=True, rounds=rounds)
        assert len({id(s) for s in specs}) == len(specs)  # no spec object is shared between trials
        return [names[(s.threads, s.precision)] for s in specs]

    assert order(1) == ["base", "t1", "bf16", "base"]
    assert order(2) == ["base", "t1", "bf16", "bf16", "t1", "base"]
    assert order(3) == ["base", "t1", "bf16", "bf16", "t1", "base", "base", "t1", "bf16", "base"]
    for rounds in (2, 4):
        positions = {}
        for i, name in enumerate(order(rounds)):
            positions.setdefault(name, []).append(i)
        assert len({sum(p) / len(p) for p in positions.values()}) == 1
    with pytest.raises(api.UsageError, match="--rounds takes a count from 1 to 1000"):
        order(0)


@pytest.mark.parametrize("args,message", [
    (["run", "mlp", "-d", "cpu", "--repeat", "0"], "--repeat takes a count from 1 to 1000, got 0"),
    (["scaling", "mlp", "--rounds", "0"], "--rounds takes a count from 1 to 1000, got 0"),
    (["scaling", "mlp", "--rounds", "100000000"], "--rounds takes a count from 1 to 1000, got 100000000"),
])
def test_a_count_of_rounds_out_of_range_is_one_line_exit_2(args, message, monkeypatch):
    from typer.testing import CliRunner

    from rigbench import cli

    monkeypatch.setattr(experiment_devices, "framework_devices", lambda framework: pytest.fail("no device asked"))
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 2 and message in result.output and len(result.output.strip().splitlines()) == 1


def test_run_in_rounds_reverses_every_other_round():
    a, b, c = (TrialSpec(workload="mlp", device="cpu", batch_size=n) for n in (8, 16, 32))
    assert [s.batch_size for s in api.in_rounds([a, b, c], 3)] == [8, 16, 32, 32, 16, 8, 8, 16, 32]
    assert api.in_rounds([a], 1) == [a] and api.in_rounds([a], 1)[0] is not a


def test_each_compile_mode_is_its_own_row_and_chart_series():
    """A compile mode is the compile knob's value: default and reduce-overhead are two rows of
    the table, in mode order, and two series of the report's compile chart, each over eager."""
    from rigbench.reports.scaling_charts import compile_layout_charts

    trials = [result(200.0), result(300.0, compile="reduce-overhead"), result(100.0, compile="default"),
              result(250.0, channels_last=True)]
    rows = scaling_table(trials)
    assert [(r.label, r.speedup) for r in rows[1:]] == [
        ("compile", 0.5), ("compile reduce-overhead", 1.5), ("channels-last", 1.25)]
    [chart] = compile_layout_charts(trials)
    assert [(s.name, s.y) for s in chart.series] == [
        ("compile reduce-overhead", [1.5]), ("compile", [0.5]), ("channels-last", [1.25])]
