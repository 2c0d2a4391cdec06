"""The recommendation rules on synthetic Results with hand-computed answers."""

from pathlib import Path

import pytest

from rigbench.analysis import recommend as rules
from rigbench.analysis.recommend_model import MemoryLimit
from rigbench.errors import UsageError
from rigbench.experiments.recommend import batch_grid, recommend, stored_limit
from rigbench.spec import LrFindOptions, MeasureOptions, Metrics, Result, TrainOptions, TrialSpec
from rigbench.store.bundle import load_bundle
from rigbench.workloads import get_workload
from tests.unit.test_lr_find_rule import FLAT_DIGITS_LOSSES, ramp_of

MIB = 2**20
_ids = iter(range(1, 10_000))


def trial(batch=64, speed=100.0, device="cpu", status="ok", steps=10, reported_threads=2, error=None,
          measure=None, metrics=None, **spec_fields):
    """A stored-looking Result of workload mlp; `spec_fields` go to the TrialSpec."""
    spec = TrialSpec(workload="mlp", device=device, batch_size=batch,
                     measure=measure or MeasureOptions(), **spec_fields)
    values = {"steps_measured": steps}
    if status == "ok" and speed is not None:
        values.update(samples_per_s=speed, samples_per_s_ci=(speed * 0.95, speed * 1.05))
    values.update(metrics or {})
    return Result(id=next(_ids), run_id="r", created_at="2026-01-01T00:00:00+00:00", spec=spec, status=status,
                  error=error, threads=spec_fields.get("threads") or reported_threads, metrics=Metrics(**values))


def train_run(batch, accuracy, epochs=3, dataset="digits", **train_fields):
    options = TrainOptions(dataset=dataset, epochs=epochs, **train_fields)
    return trial(batch=batch, speed=None, train=options,
                 metrics={"final_accuracy": accuracy, "dataset": dataset, "epochs": epochs})


def test_knee_is_the_smallest_batch_within_90_percent_of_the_best():
    assert rules.knee({16: 100.0, 64: 180.0, 256: 195.0}) == (64, 256)  # 180 >= 0.9 * 195 = 175.5
    assert rules.knee({16: 100.0, 64: 180.0, 256: 195.0}, fraction=0.95) == (256, 256)
    assert rules.knee({8: 50.0}) == (8, 8)
    with pytest.raises(ValueError):
        rules.knee({})


def test_batch_decision_respects_the_memory_limit_and_ignores_probes():
    results = [trial(16, 100.0), trial(64, 180.0), trial(256, 195.0),
               trial(512, 900.0, steps=2)]  # a max-batch probe: 2 steps are no throughput
    line = rules.decide_batch(results, "cpu", MemoryLimit("cpu", 256, 512, 256, 2**30))
    assert line.value == 64
    assert line.numbers["best_batch"] == 256 and line.numbers["best_samples_per_s"] == 195.0
    assert "92% of b256's 195.0 samples/s" in line.text and "first oom 512" in line.text
    capped = rules.decide_batch(results, "cpu", MemoryLimit("cpu", 128, 256, 64, 2**30))
    assert capped.value == 64 and capped.numbers["left_out_over_memory_limit"] == [256]
    assert "left out over the limit: 256" in capped.text
    assert "may be faster still" not in line.text  # b256 is as large as max-batch allows
    unlimited = rules.decide_batch(results, "cpu", None).text
    assert "memory limit not measured" in unlimited and "larger ones may be faster still" in unlimited


def test_a_max_batch_search_that_met_no_oom_caps_nothing():
    """The search stops at its reach (2x the grid's largest batch): a batch beyond it is not
    known not to fit, so it is measured and counted, not left out."""
    reached = MemoryLimit("cpu", 512, None, 512, 11 * 2**30)
    assert reached.cap is None and MemoryLimit("cpu", 512, 1024, 496, 2**30).cap == 496
    results = [trial(256, 150.0), trial(1024, 200.0)]
    line = rules.decide_batch(results, "cpu", reached)
    assert line.value == 1024 and line.numbers["left_out_over_memory_limit"] == []


def test_accuracy_caveat_from_train_runs_at_larger_batches():
    speed = [trial(16, 100.0), trial(64, 180.0), trial(256, 195.0)]
    runs = [train_run(16, 0.93), train_run(64, 0.925), train_run(256, 0.85), train_run(256, 0.99, epochs=10)]
    line = rules.decide_batch(speed + runs, "cpu", None)
    assert line.value == 64
    caveat = line.numbers["accuracy_caveat"]
    # the 10-epoch run is not comparable with the 3-epoch ones; the biggest drop is 16 -> 256
    assert (caveat["small_batch"], caveat["large_batch"], caveat["epochs"]) == (16, 256, 3)
    assert caveat["drop"] == pytest.approx(0.08)
    assert "85.0% at b256 but 93.0% at b16" in line.text
    assert "accuracy_caveat" not in rules.decide_batch(speed + runs[:2], "cpu", None).numbers  # half a point: noise


def test_device_is_the_fastest_at_its_best_fitting_batch():
    results = [trial(64, 200.0), trial(256, 250.0), trial(64, 2000.0, device="cuda:0"),
               trial(256, 9000.0, device="cuda:0")]
    line = rules.decide_device(results, ["cpu", "cuda:0"], {"cuda:0": MemoryLimit("cuda:0", 128, 256, 128, None)})
    assert line.value == "cuda:0"  # b256 does not fit: its best fitting batch is 64
    assert line.numbers["cuda:0"] == {"best_batch": 64, "samples_per_s": 2000.0}
    assert "cpu 250.0 samples/s at b256" in line.text
    assert rules.decide_device([], ["cpu"], {}).value is None


def test_learning_rate_is_scaled_linearly_to_the_batch():
    found = trial(64, None, lr_find=LrFindOptions(dataset="digits"), metrics={"suggested_lr": 0.01})
    line = rules.decide_lr([found], 256, "sgd")
    assert line.value == pytest.approx(0.04)
    assert "x4 to batch 256 by the linear-scaling rule (Goyal et al. 2017" in line.text
    assert "for adam it is only a starting point" in rules.decide_lr([found], 256, "adam").text
    same = trial(256, None, lr_find=LrFindOptions(dataset="digits"), metrics={"suggested_lr": 0.03})
    assert rules.decide_lr([found, same], 256, "sgd").value == pytest.approx(0.03)  # measured at the batch
    assert rules.decide_lr([], 256, "sgd").value is None


def test_learning_rate_from_the_newest_lr_find_with_a_suggestion_by_todays_rule():
    """A newer lr-find over a flat curve (1e-6 to 1e-5, 8 steps) stored 3.73e-07 under the old
    rule; the recommendation took it as the newest. Its curve gives no suggestion now, so the
    older 0.0215 is used, and the line names the newer trial that gave none."""
    good = trial(64, None, lr_find=LrFindOptions(dataset="digits"), metrics={"suggested_lr": 0.0215})
    flat = trial(64, None, lr_find=LrFindOptions(dataset="digits", start_lr=1e-6, end_lr=1e-5, steps=8),
                 metrics={"suggested_lr": 3.73e-07})
    flat.lr_curve = [tuple(row) for row in ramp_of(FLAT_DIGITS_LOSSES)]
    assert rules.lr_find_result([good, flat], 64) is good and rules.lr_suggestion(flat) is None
    line = rules.decide_lr([good, flat], 64, "sgd")
    assert line.value == pytest.approx(0.0215) and line.numbers["lr_find_trial"] == good.id
    assert f"(trial {good.id}, digits; " in line.text
    assert f"; newer lr-find trial {flat.id} gave no suggestion)" in line.text
    alone = rules.decide_lr([flat], 64, "sgd")
    assert alone.value is None and f"lr-find trial {flat.id} gave no suggestion" in alone.text


def test_batch_figures_are_the_mean_of_the_newest_runs_repeats():
    """`run --repeat 2` at b64 (160 and 250, geometric mean 200) supersedes an older run's 999
    there; the knee reads the means: b16's 185 is 92% of 200, so b16."""
    old = trial(64, 999.0).model_copy(update={"run_id": "old", "id": 1})
    results = [old, trial(16, 185.0), trial(64, 160.0), trial(64, 250.0)]
    line = rules.decide_batch(results, "cpu", None)
    assert line.value == 16 and line.numbers["samples_per_s"] == {16: 185.0, 64: pytest.approx(200.0)}
    assert line.numbers["trials"] == {16: [results[1].id], 64: [results[2].id, results[3].id]}
    assert rules.decide_device(results, ["cpu"], {}).numbers["cpu"] == {"best_batch": 64, "samples_per_s": 200.0}


def test_precision_is_the_fastest_resolved_and_failures_are_shown():
    fp32, fp16 = trial(64, 100.0), trial(64, None, status="unsupported", precision="fp16",
                                          error="fp16 autocast is not supported on cpu")
    line = rules.decide_precision([fp32, trial(64, 40.0, precision="bf16"), fp16], "cpu", 64)
    assert line.value == "fp32" and "bf16 0.40x" in line.text and "fp16 unsupported (fp16 autocast" in line.text
    faster = rules.decide_precision([fp32, trial(64, 150.0, precision="bf16")], "cpu", 64)
    assert faster.value == "bf16" and faster.numbers["bf16"]["speedup"] == pytest.approx(1.5)
    assert "can lower accuracy" in faster.text and "with the intervals apart" in faster.text
    # another batch or a compiled trial is not part of the decision
    assert rules.decide_precision([fp32, trial(32, 500.0, precision="bf16"),
                                   trial(64, 500.0, precision="bf16", compile=True)], "cpu", 64).value == "fp32"


def test_a_faster_precision_within_noise_keeps_fp32():
    """bf16 at 108 [102.6-113.4] against fp32's 100 [95-105]: faster, but not resolved."""
    line = rules.decide_precision([trial(64, 100.0), trial(64, 108.0, precision="bf16")], "cpu", 64)
    assert line.value == "fp32" and line.numbers["bf16"]["within_noise"] is True
    assert line.text.startswith("precision: fp32, no other precision resolved faster at b64: ")
    assert "bf16 1.08x (within noise)" in line.text and "caveat" not in line.text


def test_repeats_count_as_one_configuration_in_the_precision_line():
    """fp32 repeats at 80 and 125 (one run): geometric mean 100, interval 76-131.25; bf16 at 118
    [112.1-123.9] beats the first fp32 trial's interval but not the pair's, so fp32 stays."""
    results = [trial(64, 80.0), trial(64, 118.0, precision="bf16"), trial(64, 125.0)]
    line = rules.decide_precision(results, "cpu", 64)
    assert line.value == "fp32" and line.numbers["fp32"]["samples_per_s"] == pytest.approx(100.0)
    assert line.numbers["fp32"]["trials"] == [results[0].id, results[2].id]
    assert line.numbers["bf16"]["speedup"] == pytest.approx(1.18) and line.numbers["bf16"]["within_noise"]


def test_threads_are_the_fastest_resolved_count():
    results = [trial(64, 100.0), trial(64, 120.0, threads=1), trial(64, 81.0, threads=2), trial(32, 999.0, threads=2)]
    line = rules.decide_threads(results, "cpu", 64)
    # threads=2 is the default's own count (it ran with 2): one more baseline trial, so the
    # default is sqrt(100 x 81) = 90 [76.95-105]; threads=1 at 120 [114-126] is resolved faster
    assert line.value == 1 and line.text.startswith("threads: 1, 1.33x the default 2's samples/s with the intervals apart")
    assert line.numbers == {
        1: {"samples_per_s": 120.0, "trial": results[1].id, "trials": [results[1].id], "within_noise": False},
        2: {"samples_per_s": pytest.approx(90.0), "trial": results[2].id, "trials": [results[0].id, results[2].id],
            "within_noise": None}}
    assert rules.decide_threads(results, "cuda:0", 64) is None


def test_threads_within_noise_keep_the_default():
    line = rules.decide_threads([trial(64, 100.0), trial(64, 104.0, threads=1)], "cpu", 64)
    assert line.value == 2 and line.numbers[1]["within_noise"] is True
    assert line.text == ("threads: 2, the framework's default; no other count resolved faster at b64: "
                         "1 -> 104 (within noise), 2 -> 100 (the default)")
    alone = rules.decide_threads([trial(64, 100.0)], "cpu", 64)
    assert alone.value == 2 and "only one thread count measured" in alone.text


def test_pipeline_bound_and_workers_from_loader_runs():
    runs = [train_run(64, 0.9, input_mode="loader", workers=0),
            train_run(64, 0.9, input_mode="loader", workers=2)]
    runs[0].metrics = runs[0].metrics.model_copy(update={"samples_per_s": 500.0, "input_fraction": 0.05, "copy_fraction": 0.6})
    runs[1].metrics = runs[1].metrics.model_copy(update={"samples_per_s": 400.0, "input_fraction": 0.01, "copy_fraction": 0.5})
    for r in runs:
        r.spec = r.spec.model_copy(update={"device": "cuda:0"})
    workers, bound = rules.decide_pipeline(runs, "cuda:0")
    assert workers.value == 0 and set(workers.numbers["by_workers"]) == {0, 2}
    assert bound.value == "copy" and "host-to-device copies 60.0%" in bound.text
    assert bound.numbers["compute"] == pytest.approx(0.35)
    missing = rules.decide_pipeline([], "cpu")
    assert [line.value for line in missing] == [None, None] and "--input loader" in missing[0].text


def test_epoch_time_is_the_recommended_configurations():
    """The configuration the precision and threads lines chose, not a faster one they kept out
    (`recommend --framework jax` recommended 2 threads, the default, and timed the epoch at the
    1-thread trial's speed)."""
    results = [trial(64, 100.0), trial(64, 200.0, threads=1), trial(128, 900.0)]
    line = rules.decide_epoch_time(results, "cpu", 64, 60_000, input_share=0.25)
    assert line.value == pytest.approx(600.0)  # 60,000 / 100: the default threads, not threads=1's 200
    assert line.numbers["seconds_with_input_pipeline"] == pytest.approx(800.0)
    assert line.numbers["trial"] == results[0].id and "the recommended configuration" in line.text
    one = rules.decide_epoch_time(results, "cpu", 64, 60_000, threads=1)
    assert one.value == pytest.approx(300.0) and one.numbers["trial"] == results[1].id
    # repeats of one run count together: the lucky 300 gives way to (200 x 120 x 300)^(1/3) = 193.1
    repeats = [*results, trial(64, 120.0, threads=1), trial(64, 300.0, threads=1)]
    again = rules.decide_epoch_time(repeats, "cpu", 64, 60_000, threads=1)
    ids = [repeats[i].id for i in (1, 3, 4)]
    assert again.value == pytest.approx(60_000 / (200 * 120 * 300) ** (1 / 3)) and again.numbers["trials"] == ids
    assert "mean of trials " + ", ".join(map(str, ids)) in again.text
    # bf16 and 1 thread were each recommended, but never measured together: the faster of the two
    both = rules.decide_epoch_time([*results, trial(64, 150.0, precision="bf16")], "cpu", 64, 60_000,
                                   precision="bf16", threads=1)
    assert both.value == pytest.approx(300.0)
    assert "the faster of the recommended threads=1 and bf16, measured one at a time: together not measured" in both.text


def test_one_configuration_has_one_figure_in_every_line():
    """After `rigbench scaling`: the baseline ran twice (150, 157) and threads=2, the default's own
    count, once (151): three trials of one configuration. The device, batch, precision, threads
    and epoch lines all give their geometric mean (a `recommend` printed 153.4 samples/s from two
    of them in the device and batch lines and fp32 152.6 from three in the precision line)."""
    results = [trial(64, 150.0), trial(64, 151.0, threads=2), trial(64, 157.0), trial(16, 60.0),
               trial(64, 120.0, threads=1), trial(64, 140.0, precision="bf16")]
    lines = {line.decision: line for line in rules.recommend(results, ["cpu"], {}, "sgd", 60_000)}
    mean = (150.0 * 151.0 * 157.0) ** (1 / 3)
    assert f"{mean:,.1f} samples/s" == "152.6 samples/s"
    assert lines["device"].numbers["cpu"]["samples_per_s"] == pytest.approx(mean)
    assert lines["batch_size"].numbers["samples_per_s"][64] == pytest.approx(mean)
    assert lines["precision"].numbers["fp32"]["samples_per_s"] == pytest.approx(mean)
    assert lines["threads"].numbers[2]["samples_per_s"] == pytest.approx(mean)
    assert lines["epoch_seconds"].numbers["samples_per_s"] == pytest.approx(mean)
    for decision in ("device", "batch_size", "precision", "epoch_seconds"):
        assert "152.6 samples/s" in lines[decision].text, decision
    assert lines["batch_size"].numbers["trials"][64] == [results[i].id for i in (0, 1, 2)]


def test_full_recommendation_in_order():
    results = [trial(16, 100.0), trial(64, 180.0), trial(256, 195.0), trial(64, 150.0, threads=1),
               trial(64, 60.0, precision="bf16"),
               trial(64, None, lr_find=LrFindOptions(dataset="digits"), metrics={"suggested_lr": 0.02})]
    lines = rules.recommend(results, ["cpu"], {"cpu": MemoryLimit("cpu", 512, None, 512, 2**30)}, "sgd", 60_000)
    assert [(line.decision, line.value) for line in lines] == [
        ("device", "cpu"), ("batch_size", 64), ("learning_rate", 0.02), ("precision", "fp32"),
        ("energy", None), ("threads", 2), ("step_overhead", "work-bound"), ("loader_workers", None), ("bound_by", None),
        ("epoch_seconds", 60_000 / 180.0)]


def joules(j, note=None):
    return {"energy_per_sample_j": j, "energy_note": note}


def test_energy_optimum_beside_the_fastest_with_its_cost_in_time():
    results = [trial(64, 1000.0, metrics=joules(0.004)), trial(512, 2000.0, metrics=joules(0.0015)),
               trial(512, 1760.0, precision="bf16", metrics=joules(0.0013)),
               trial(64, 900.0, precision="bf16", metrics=joules(0.003)),
               trial(512, 5000.0, threads=1, metrics=joules(0.0001)),  # another knob: not compared
               trial(1024, 3000.0, metrics=joules(0.0009)),  # over the memory limit
               trial(512, 9000.0, device="cuda:0", metrics=joules(0.0001))]  # another device
    line = rules.decide_energy(results, "cpu", MemoryLimit("cpu", 512, 1024, 512, 2**30))
    assert line.value == {"batch_size": 512, "precision": "bf16"}
    assert line.text == ("energy: bf16 b512: 1.3 mJ/sample, 12% slower than the fastest "
                         "(fp32 b512, 1.5 mJ/sample)")  # 1 - 1760 / 2000
    assert line.numbers["slower_than_fastest"] == pytest.approx(0.12)
    assert line.numbers["fastest"]["trial"] == results[1].id and line.numbers["considered"] == 4
    # without the limit, b1024 is both the fastest and the least energy per sample
    unlimited = rules.decide_energy(results, "cpu", None)
    assert unlimited.value == {"batch_size": 1024, "precision": "fp32"}
    assert unlimited.text == "energy: fp32 b1024: 900 µJ/sample, also the fastest"


def test_energy_partly_measured_compares_what_was_measured():
    results = [trial(64, 1000.0, metrics=joules(0.004)), trial(512, 2000.0, metrics=joules(None, "no RAPL"))]
    line = rules.decide_energy(results, "cpu", None)
    assert line.value == {"batch_size": 64, "precision": "fp32"}
    assert "50% slower than the fastest (fp32 b512, energy not measured)" in line.text
    assert line.text.endswith("; energy measured on 1 of the 2 trials compared")


def test_energy_not_measured_says_why_once():
    note = "cpu: RAPL unavailable (no /sys/class/powercap); gpu: no NVIDIA GPU"
    results = [trial(64, 1000.0, metrics=joules(None, note)), trial(512, 2000.0, metrics=joules(None, note)),
               trial(256, 1500.0, metrics=joules(None, "cpu: permission denied"))]
    line = rules.decide_energy(results, "cpu", None)
    assert line.value is None
    assert line.text == f"energy: not measured here ({note}; cpu: permission denied)"
    assert line.numbers == {"trials": 3, "notes": [note, "cpu: permission denied"]}
    old = rules.decide_energy([trial(64, 1000.0)], "cpu", None)  # stored before energy existed
    assert old.text == "energy: not measured here (no energy figure is stored with these trials)"


def test_stored_max_batch_probes_rebuild_the_limit():
    probe = MeasureOptions.quick(min_steps=2, min_seconds=0.0, memory_limit_bytes=700 * MIB)
    probes = [trial(256, 50.0, steps=2, measure=probe, metrics={"rss_peak_mib": 500.0}),
              trial(512, 60.0, steps=2, measure=probe, metrics={"rss_peak_mib": 700.0}),
              trial(1024, None, status="oom", steps=0, measure=probe)]
    limit = stored_limit(probes + [trial(64, 100.0)], "cpu")
    # model: 300 MiB + 200/256 MiB per sample; 90% of 700 MiB = 630 MiB -> batch 422 -> 416 (x8)
    assert (limit.largest_ok, limit.smallest_oom, limit.recommended) == (512, 1024, 416)
    assert limit.limit_bytes == 700 * MIB and limit.cap == 416
    assert stored_limit([trial(64, 100.0)], "cpu") is None


def search(run, *probes, device="cpu"):
    """One stored max-batch search: (batch, status) probes in the order they ran, under `run`."""
    measure = MeasureOptions.quick(min_steps=2, min_seconds=0.0, memory_limit_bytes=2**30 if device == "cpu" else None)
    return [trial(b, 50.0 if status == "ok" else None, status=status, steps=2, measure=measure, device=device)
            .model_copy(update={"run_id": run}) for b, status in probes]


def test_a_complete_max_batch_search_is_preferred_to_a_newer_incomplete_one():
    """A search stopped by Ctrl-C after a doubling ran out of memory (1024 ok, 2048 oom: never
    bisected) hid an older complete one: it is used only when alone, and the line says so."""
    complete = search("a", (512, "ok"), (1024, "oom"), (768, "ok"), (896, "oom"), (832, "ok"), (864, "oom"))
    stopped = search("b", (128, "ok"), (256, "ok"), (512, "ok"), (1024, "ok"), (2048, "oom"))
    limit = stored_limit(complete + stopped, "cpu")
    assert (limit.run_id, limit.largest_ok, limit.smallest_oom, limit.unfinished) == ("a", 832, 864, None)
    alone = stored_limit(stopped, "cpu")
    assert alone.run_id == "b" and alone.unfinished == "it stopped before trying the batches between 1024 and 2048"
    line = rules.decide_batch([trial(64, 100.0)], "cpu", alone)
    assert ("max-batch: largest that ran 1024, recommended 1024, first oom 2048; an incomplete search (run b): "
            "it stopped before trying the batches between 1024 and 2048") in line.text
    assert line.numbers["max_batch"]["unfinished"] == alone.unfinished
    assert "incomplete" not in rules.decide_batch([trial(64, 100.0)], "cpu", limit).text
    # a probe that ended neither ok nor oom stopped its search: incomplete too (a GPU crash is no oom)
    crashed = search("c", (256, "ok"), (512, "oom"), (384, "timeout"), device="cuda:0")
    assert stored_limit(crashed, "cuda:0").unfinished == "it stopped at batch 384, which ended timeout"


def test_a_max_batch_search_without_an_oom_is_said_to_cap_nothing():
    """`largest that ran 128, recommended 128` read as a cap; such a search stopped at its reach.
    A complete search that found a limit is preferred to a newer one that found none."""
    reach = search("c", (64, "ok"), (128, "ok"))
    limit = stored_limit(reach, "cpu")
    assert limit.cap is None and limit.smallest_oom is None
    line = rules.decide_batch([trial(64, 100.0), trial(256, 150.0)], "cpu", limit)
    assert "max-batch: no out-of-memory up to b128, where its search stopped (run c), so it caps nothing" in line.text
    assert "largest that ran" not in line.text and line.value == 256
    capped = search("a", (512, "ok"), (1024, "oom"), (768, "ok"), (896, "oom"), (832, "ok"), (864, "oom"))
    assert stored_limit(capped + reach, "cpu").run_id == "a"


def test_batch_grid():
    assert batch_grid(get_workload("mlp"), quick=True) == [16, 64, 256]
    assert batch_grid(get_workload("cnn"), quick=False) == [32, 64, 128, 256, 512]
    assert batch_grid(get_workload("catsdogs"), quick=True) == [1, 2, 8]


def test_no_run_on_an_empty_database_lists_what_is_missing(tmp_path):
    from rigbench.store import Store

    Store(str(tmp_path / "empty.db"))  # made: --no-run only reads, and a missing database is an error
    outcome = recommend("mlp", devices=["cpu"], run_missing=False, db=str(tmp_path / "empty.db"))
    assert [(line.decision, line.value) for line in outcome.lines] == [("device", None)]
    assert outcome.ran == [] and outcome.run_id is None
    assert outcome.missing[0] == "max-batch on cpu (no stored max-batch search)"
    assert outcome.missing[1].startswith("batch sizes 16, 32, 64, 128, 256 on cpu")
    # no device asked for and none measured: the CPU, which every machine has (no "no device")
    unasked = recommend("mlp", run_missing=False, db=str(tmp_path / "empty.db"))
    assert unasked.devices == ["cpu"] and unasked.missing == outcome.missing
    with pytest.raises(UsageError, match="--dataset-size must be at least 1"):
        recommend("mlp", dataset_size=0, run_missing=False, db=str(tmp_path / "empty.db"))


def test_energy_decision_on_the_real_h100_results():
    """docs/results/gpu-h100.bundle.json: cnn on an H100, NVML's energy counter (read only)."""
    bundle = load_bundle(Path(__file__).resolve().parents[2] / "docs" / "results" / "gpu-h100.bundle.json")
    cnn = [r for r in bundle.results if r.spec.workload == "cnn"]
    line = rules.decide_energy(cnn, "cuda:0", None)
    # 6 trials with energy (b32, b128, b512 in fp32 and bf16) and a b128 fp32 one from a run without it;
    # bf16 b512 uses the least (1.30 mJ), fp32 b512 is the fastest: 1 - 171,532 / 220,863 = 22% slower
    assert line.value == {"batch_size": 512, "precision": "bf16"}
    assert line.text == ("energy: bf16 b512: 1.3 mJ/sample, 22% slower than the fastest (fp32 b512, "
                         "1.53 mJ/sample); energy measured on 6 of the 7 trials compared")


@pytest.mark.parametrize("flags, native", [
    (["avx2", "fma", "sse4_2"], False),                      # the dev VM's AMD EPYC: emulated bf16
    (["avx2", "avx512f", "avx512_bf16"], True),             # Cooper Lake, Zen 4
    (["avx512f", "amx_tile", "amx_bf16"], True),            # Sapphire Rapids
    (["fp", "asimd", "bf16"], True),                        # Neoverse V1 (/proc/cpuinfo on aarch64)
    ([], None),                                             # flags unknown: no claim either way
])
def test_native_bf16_from_the_cpu_flags(flags, native):
    from rigbench.hw.cpu import native_bf16

    assert native_bf16(flags) is native


def test_recommend_skips_emulated_bf16_on_a_cpu_and_says_why(monkeypatch):
    # `recommend mlp -d cpu` took 8.4 min on an AVX2-only EPYC, most of it one bf16 trial at
    # 30 s a step: a CPU without native bf16 is not asked to run it.
    from rigbench.experiments import recommend as experiment

    monkeypatch.setattr(experiment, "cpu_identity", lambda: {"model": "AMD EPYC", "flags": ["avx2", "fma"]})
    checks, why = experiment.precision_checks("cpu")
    assert checks == [] and why.startswith("bf16 on cpu: this CPU has no native bfloat16")
    monkeypatch.setattr(experiment, "cpu_identity", lambda: {"model": "Xeon", "flags": ["avx512_bf16"]})
    assert experiment.precision_checks("cpu") == (["bf16"], None)
    assert experiment.precision_checks("cuda:0") == (["tf32", "bf16", "fp16"], None)


def gpt(options, r):
    """`r` as a trial of gpt with `options` (trial() makes mlp's)."""
    return r.model_copy(update={"spec": r.spec.model_copy(update={"workload": "gpt", "workload_options": options})})


def test_a_transformer_recommendation_uses_its_own_options_only_and_its_default_lr():
    """Memory per sample grows with a gpt's context, so a max-batch search or a speed at one
    context says nothing of another: the recommendation for gpt:context=128 reads its own."""
    from rigbench.experiments.recommend import stored_recommendation

    probe = MeasureOptions.quick(min_steps=2, min_seconds=0.0, memory_limit_bytes=700 * MIB)
    ctx128 = {"context": 128}
    results = [gpt(ctx128, trial(8, 50.0)), gpt(ctx128, trial(32, 60.0)),
               gpt(ctx128, trial(32, 40.0, steps=2, measure=probe, metrics={"capped_peak_mib": 500.0})),
               gpt(ctx128, trial(64, 45.0, steps=2, measure=probe, metrics={"capped_peak_mib": 650.0})),
               gpt(ctx128, trial(128, None, status="oom", steps=0, measure=probe)),
               gpt({}, trial(32, 900.0)),  # context 64: faster per sample, never mixed in
               gpt({}, trial(512, 80.0, steps=2, measure=probe, metrics={"capped_peak_mib": 600.0}))]
    lines = {line.decision: line for line in stored_recommendation(results, "gpt:context=128")}
    assert lines["batch_size"].value == 32 and "60" in lines["batch_size"].text
    # model: 350 MiB + 150/32 MiB a sample; 90% of 700 MiB = 630 MiB -> batch 59, capped at 64 -> 56
    assert lines["batch_size"].numbers["max_batch"]["recommended"] == 56
    assert lines["batch_size"].numbers["samples_per_s"] == {8: 50.0, 32: 60.0}
    # the gpt trains on text, so lr-find applies to it: without one stored, the line asks for it
    assert lines["learning_rate"].value is None and "rigbench lr-find" in lines["learning_rate"].text
    # a workload lr-find does not fit (Workload.lr_find: the GAN) gets its default rate, not a command
    line = rules.decide_lr([], 32, "adam", lr_find=False, default_lr=2e-4)
    assert line.value == pytest.approx(2e-4) and "lr-find does not apply" in line.text


def test_a_jax_recommendations_hints_name_the_framework():
    """Each command a recommendation hints at runs the framework recommended for: lr-find and
    the loader run of a JAX recommendation with --framework jax (torch's without the flag)."""
    from rigbench.experiments.recommend import stored_recommendation

    def in_jax(r):
        return r.model_copy(update={"spec": r.spec.model_copy(update={"framework": "jax"})})

    results = [in_jax(trial(16, 100.0)), in_jax(trial(32, 150.0))]
    lines = {line.decision: line for line in stored_recommendation(results, "mlp", framework="jax")}
    assert lines["batch_size"].value == 32
    assert "`rigbench lr-find mlp --framework jax --dataset DATASET`" in lines["learning_rate"].text
    assert "(rigbench train mlp --framework jax --input loader --workers N --device cpu)" in lines["loader_workers"].text
    torch_lines = {line.decision: line for line in stored_recommendation([trial(16, 100.0)], "mlp")}
    assert "`rigbench lr-find mlp --dataset DATASET`" in torch_lines["learning_rate"].text
    # no device measured: the hint that measures one names the framework too
    [device] = stored_recommendation([], "mlp", framework="jax")
    assert "rigbench run mlp --framework jax --batch-size" in device.text


def test_a_recommendation_that_rests_on_busy_trials_says_which_and_how_to_measure_afresh(tmp_path):
    from rigbench.fingerprint import machine_fingerprint
    from rigbench.store import Store

    db = str(tmp_path / "busy.db")
    store = Store(db)
    store.add_run("r", "2026-01-01T00:00:00+00:00", "rigbench run", machine_fingerprint())
    quiet = trial(16, 100.0, metrics={"others_cpu_pct_mean": 1.0})
    busy = trial(64, 40.0, metrics={"others_cpu_pct_mean": 48.0})
    # a probe's speed is never used: busy, it was named all the same ("while trials 1, 2, 3, 5, 7
    # were timed" of a database holding one max-batch search and nothing else)
    probe = trial(256, 30.0, steps=2, kind="probe", measure=MeasureOptions.quick(min_steps=2, min_seconds=0.0),
                  metrics={"others_cpu_pct_mean": 75.0, "capped_peak_mib": 500.0})
    quiet.id = store.add_result(quiet)
    busy.id = store.add_result(busy)
    store.add_result(probe)
    outcome = recommend("mlp", devices=["cpu"], run_missing=False, db=db)
    assert outcome.busy is not None
    assert outcome.busy.startswith(f"busy: other processes used 48% of this machine's CPU while trial {busy.id} was")
    # only speed trials are measured again (`again` in experiments/recommend): the note said "them" of
    # busy lr-find trials too
    assert outcome.busy.endswith("recommend measures its busy speed trials again when it next runs (not with "
                                 "--no-run; lr-find and input-pipeline trials are used as they are): run it "
                                 "when the machine is quiet.")
    assert outcome.to_dict()["busy"] == outcome.busy
    Store(str(tmp_path / "empty.db"))
    assert recommend("mlp", devices=["cpu"], run_missing=False, db=str(tmp_path / "empty.db")).busy is None


def test_what_a_recommendation_may_run_names_only_what_runs_for_it():
    # a JAX recommendation said it might run torch.compile, which compile_trials runs for torch alone
    from rigbench.experiments.recommend import _expected

    torch_said = _expected(["cpu"], [16, 64], [], MeasureOptions.quick())
    assert "(and torch.compile where the step proves overhead-bound)" in torch_said
    for framework in ("jax", "tensorflow"):
        said = _expected(["cpu"], [16, 64], [], MeasureOptions.quick(), framework)
        assert "torch.compile" not in said and said.startswith("recommend: up to ")
    # nor an lr-find where the workload takes none (dcgan: it said "plus an lr-find" all the same)
    gan = _expected(["cpu"], [16], [], MeasureOptions.quick(), "torch", lr_find=False)
    assert "plus a loader epoch where a data set is here" in gan and "lr-find" not in gan
    # with timed results stored: it pointed at "the plan below", which a recommendation lacking
    # nothing never printed
    assert _expected(["cpu"], [16], [trial(16, 100.0)], MeasureOptions.quick()) == (
        "recommend: measuring only what the stored results lack, each step announced as it starts (nothing, where "
        "they lack nothing)")
