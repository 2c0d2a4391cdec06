"""The single score: geometric mean of speed-ups over a reference machine, with known answers."""

import json
import math

import numpy as np
import pytest

from rigbench import api
from rigbench.analysis.score import _resampled_speed, compute_score, default_suite, suite_results
from rigbench.analysis.stats import block_length, geometric_mean
from rigbench.errors import UsageError
from rigbench.spec import Metrics, Result, TrialSpec
from rigbench.store import Store
from rigbench.store.bundle import dump_bundle, export_bundle
from rigbench.workloads import WORKLOADS

MINE = {"hostname": "here", "cpu_model": "AMD EPYC"}
THEIRS = {"hostname": "ref", "cpu_model": "Intel Xeon"}
TIMES = [0.10, 0.11, 0.09, 0.10, 0.12, 0.10, 0.095]


def make(workload, times, rid=None, run_id="r", batch=None, device="cpu", precision="fp32", **options):
    batch = batch or WORKLOADS[workload].default_batch
    spec = TrialSpec(workload=workload, workload_options=options, device=device, batch_size=batch,
                     precision=precision)
    return Result(id=rid, run_id=run_id, created_at="2026-01-01T00:00:00+00:00", spec=spec, status="ok",
                  device_name="cpu name", step_times_s=times,
                  metrics=Metrics(samples_per_s=batch / sorted(times)[len(times) // 2]))


def test_suite_is_pinned_and_versioned(monkeypatch):
    from rigbench.analysis import score as score_module
    from rigbench.workloads import Workload

    pinned = [("mlp", 64), ("autoencoder", 64), ("cnn", 128), ("rcnn", 32), ("lstm", 128),
              ("dcgan", 64), ("resnet", 128), ("catsdogs", 16)]
    assert score_module.SUITE_VERSION == "2026.2"
    assert default_suite() == default_suite("2026.2") == default_suite("2026.1") == pinned
    # 2026.2 differs from 2026.1 only in the network of catsdogs (revision 2: seed 001's notebook)
    assert score_module.suite_revisions("2026.1") == {name: 1 for name, _ in pinned}
    assert score_module.suite_revisions("2026.2") == {**{name: 1 for name, _ in pinned}, "catsdogs": 2}
    # every suite workload is still registered, so a stored result can be matched to it, and no
    # suite names a revision newer than the one rigbench builds
    assert all(name in WORKLOADS and revision <= WORKLOADS[name].revision
               for version in score_module.SUITES.values() for name, _, revision in version)
    # registering another workload (or changing a default batch) leaves the suite alone
    extra = Workload(**{**WORKLOADS["mlp"].__dict__, "name": "mlp2", "default_batch": 512})
    monkeypatch.setitem(WORKLOADS, "mlp2", extra)
    monkeypatch.setitem(WORKLOADS, "cnn", Workload(**{**WORKLOADS["cnn"].__dict__, "default_batch": 7}))
    assert default_suite() == pinned


def test_score_names_its_suite():
    ours = {"mlp": (make("mlp", TIMES),)}
    reference = {"mlp": (make("mlp", [2 * t for t in TIMES]),)}
    assert compute_score(ours, reference, "cpu").as_dict()["suite"] == "2026.2"
    assert compute_score(ours, reference, "cpu", version="2026.1").as_dict()["suite"] == "2026.1"


def _stored_before_revisions(result: Result) -> Result:
    """`result` as a store or bundle written before workload revisions existed reads it back."""
    data = result.model_dump(mode="json")
    del data["spec"]["workload_revision"]
    return Result.model_validate_json(json.dumps(data), strict=True)


def test_old_and_new_catsdogs_never_meet():
    # catsdogs measured before its network was rebuilt (revision 1) counts for suite 2026.1 only,
    # and a new one (revision 2) for 2026.2 only
    old = _stored_before_revisions(make("catsdogs", [2 * t for t in TIMES], rid=1))
    new = make("catsdogs", TIMES, rid=2)
    assert (old.spec.workload_revision, new.spec.workload_revision) == (1, 2)
    assert suite_results([old, new], "cpu") == {"catsdogs": (new,)}
    assert suite_results([old, new], "cpu", version="2026.1") == {"catsdogs": (old,)}
    # a reference measured on the old network: catsdogs is missing there, not compared
    ours = {"mlp": (make("mlp", TIMES),), **suite_results([new], "cpu")}
    reference = suite_results([_stored_before_revisions(make("mlp", [2 * t for t in TIMES])), old], "cpu")
    score = compute_score(ours, reference, "cpu")
    assert [i.workload for i in score.items] == ["mlp"] and score.missing_reference == ["catsdogs"]
    # under 2026.1 both sides' old results are scored, and the new one is not among ours
    ours_old = suite_results([make("mlp", TIMES), new], "cpu", version="2026.1")
    assert set(ours_old) == {"mlp"}


def test_reference_twice_as_slow_scores_two():
    ours = {"mlp": (make("mlp", TIMES),), "cnn": (make("cnn", TIMES),)}
    reference = {w: (make(w, [2 * t for t in TIMES]),) for w in ("mlp", "cnn")}
    score = compute_score(ours, reference, "cpu")
    assert score.value == pytest.approx(2.0)
    low, high = score.ci
    assert low <= 2.0 <= high
    assert [i.workload for i in score.items] == ["mlp", "cnn"]
    assert set(score.missing_ours) == {w for w, _ in default_suite()} - {"mlp", "cnn"}


def test_geometric_mean_of_different_speedups():
    # speed-ups 2 and 8 -> geometric mean 4; constant step times make the CI the point itself
    ours = {"mlp": (make("mlp", [0.1] * 5),), "cnn": (make("cnn", [0.1] * 5),)}
    reference = {"mlp": (make("mlp", [0.2] * 5),), "cnn": (make("cnn", [0.8] * 5),)}
    score = compute_score(ours, reference, "cpu")
    assert score.value == pytest.approx(4.0)
    assert score.ci == (pytest.approx(4.0), pytest.approx(4.0))
    assert geometric_mean([1, 10, 100]) == pytest.approx(10.0)
    with pytest.raises(ValueError):
        geometric_mean([])


def test_missing_in_reference_and_nothing_in_common():
    ours = {"mlp": (make("mlp", TIMES),), "lstm": (make("lstm", TIMES),)}
    score = compute_score(ours, {"mlp": (make("mlp", TIMES),)}, "cpu")
    assert score.value == pytest.approx(1.0)
    assert score.missing_reference == ["lstm"]
    assert compute_score(ours, {"cnn": (make("cnn", TIMES),)}, "cpu") is None


def test_only_suite_trials_count():
    results = [
        make("mlp", TIMES, rid=1, run_id="old"),
        make("mlp", [t / 2 for t in TIMES], rid=2),           # a newer run: wins
        make("mlp", TIMES, rid=3, batch=8),                    # not the reference batch
        make("mlp", TIMES, rid=4, precision="bf16"),           # not fp32
        make("resnet", TIMES, rid=5, depth=56),                # not the default options
        make("resnet", TIMES, rid=6, depth=20),                # the default, spelled out
        make("cnn", TIMES, rid=7, device="cuda:0"),            # another device class
    ]
    for rid, update in enumerate(({"threads": 1}, {"lr": 0.5}, {"compile": "default"}, {"framework": "jax"},
                                  {"world_size": 2}), start=8):
        other = make("mlp", [t / 4 for t in TIMES], rid=rid)   # newest, but not the default setting
        other.spec = other.spec.model_copy(update=update)
        results.append(other)
    chosen = suite_results(results, "cpu")
    assert {w: [r.id for r in trials] for w, trials in chosen.items()} == {"mlp": [2], "resnet": [6]}
    assert {w: [r.id for r in trials] for w, trials in suite_results(results, "gpu").items()} == {"cnn": [7]}


def _store(path, machine, run_id, factor):
    store = Store(str(path))
    store.add_run(run_id, "2026-01-01T00:00:00+00:00", "rigbench run", machine)
    for w in ("mlp", "cnn"):
        store.add_result(make(w, [factor * t for t in TIMES], run_id=run_id))
    return store


def test_api_score_against_a_bundle_file_and_a_run(tmp_path):
    reference = _store(tmp_path / "ref.db", THEIRS, "refrun", 2.0)
    bundle = tmp_path / "ref.json"
    bundle.write_text(dump_bundle(export_bundle(reference)))
    db = str(tmp_path / "mine.db")
    _store(db, MINE, "minerun", 1.0)
    outcome = api.score("minerun", str(bundle), db=db)
    (score,) = outcome.scores
    assert score.device_class == "cpu" and score.value == pytest.approx(2.0)
    assert outcome.reference_label == f"bundle {bundle}"
    assert "Intel Xeon" in outcome.reference_machine
    # a stored run as the reference: this run against itself scores 1
    assert api.score("minerun", "minerun", db=db).scores[0].value == pytest.approx(1.0)
    with pytest.raises(UsageError, match="is not a shipped reference"):
        api.score("minerun", "no-such-reference", db=db)
    # --device gpu of a CPU-only run: nothing of ours on gpu is the reason, not a missing `rigbench run`
    with pytest.raises(UsageError, match=r"run minerun measured the suite on cpu only, nothing on gpu: leave "
                                         r"--device out to score cpu \(`rigbench devices` lists"):
        api.score("minerun", str(bundle), db=db, device_class="gpu")
    assert math.isfinite(score.ci[0])


@pytest.mark.parametrize("name, device_name", [("h100-sxm-80gb", "NVIDIA H100 80GB HBM3"),
                                               ("h200-sxm-141gb", "NVIDIA H200")])
def test_the_shipped_gpu_references_are_full_gpu_suites(name, device_name):
    # Measured on lent machines (docs/results/gpu-h100.md, gpu-h200.md); each against itself gives 1.
    from rigbench.analysis.score import read_shipped_reference, shipped_references
    from rigbench.store.bundle import parse_bundle

    assert {"dev-vm-epyc-2core", name} <= set(shipped_references())
    results = parse_bundle(read_shipped_reference(name)).results
    gpu = suite_results(results, "gpu")
    assert sorted(gpu) == sorted(name for name, _ in default_suite())
    assert all(r.device_name == device_name and r.metrics.gpu_util_pct_mean for trials in gpu.values() for r in trials)
    assert compute_score(gpu, gpu, "gpu").value == pytest.approx(1.0)


def test_the_h200_scores_as_the_h100_did_by_hand():
    """The two shipped GPU suites against each other: 0.981 (docs/results/gpu-h200.md), the
    geometric mean of the eight speed-ups computed here from the stored samples/s."""
    from rigbench.analysis.score import read_shipped_reference
    from rigbench.store.bundle import parse_bundle

    h100, h200 = (suite_results(parse_bundle(read_shipped_reference(n)).results, "gpu")
                  for n in ("h100-sxm-80gb", "h200-sxm-141gb"))
    ratios = [h200[w][-1].metrics.samples_per_s / h100[w][-1].metrics.samples_per_s for w in h100]
    by_hand = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    score = compute_score(h200, h100, "gpu")
    assert score.value == pytest.approx(by_hand, rel=1e-6) and round(score.value, 3) == 0.981


def test_score_without_reference_uses_the_shipped_machine_of_each_class(tmp_path):
    # README gives `rigbench score [RUN] [--reference ...]`: with two shipped references (a
    # CPU and a GPU machine) it exited 2; each device class now meets the one that measured it.
    db = str(tmp_path / "mine.db")
    store = Store(db)
    store.add_run("minerun", "2026-01-01T00:00:00+00:00", "rigbench run", MINE)
    store.add_result(make("mlp", TIMES, run_id="minerun"))
    store.add_result(make("cnn", TIMES, run_id="minerun", device="cuda:0"))
    outcome = api.score("minerun", db=db)
    assert [s.device_class for s in outcome.scores] == ["cpu", "gpu"]
    assert outcome.reference_label == ("reference machine dev-vm-epyc-2core (cpu), "
                                       "reference machine h100-sxm-80gb (gpu)")
    assert [i.workload for s in outcome.scores for i in s.items] == ["mlp", "cnn"]


def test_a_quick_result_is_said_and_loses_to_a_full_one():
    from rigbench.spec import MeasureOptions

    full, quick = make("mlp", TIMES, rid=1), make("mlp", [t / 2 for t in TIMES], rid=2, run_id="quick")
    quick.spec = quick.spec.model_copy(update={"measure": MeasureOptions.quick()})
    assert suite_results([full, quick], "cpu")["mlp"] == (full,)  # the newer quick one does not win
    (item,) = compute_score({"mlp": (quick,)}, {"mlp": (full,)}, "cpu").items
    assert item.quick and item.as_dict()["quick"] is True
    assert not compute_score({"mlp": (full,)}, {"mlp": (full,)}, "cpu").items[0].quick


def test_a_runs_repeats_count_together_as_their_mean():
    # ours: run "new" repeats mlp three times at constant 0.1, 0.2 and 0.1 s a step (batch 64:
    # 640, 320 and 640 samples/s, geometric mean 508.0, as compare takes repeats); an older run's
    # faster trial is superseded. The reference's single trial takes 0.2 s a step (320
    # samples/s): speed-up 508.0 / 320 = 1.587.
    older = make("mlp", [0.05] * 5, rid=1, run_id="old")
    repeats = [make("mlp", [t] * 5, rid=rid, run_id="new") for rid, t in ((2, 0.1), (3, 0.2), (4, 0.1))]
    # one run over two GPUs: the newest trial's device is the configuration, the other GPU's is not pooled
    gpus = [make("mlp", [0.01] * 5, rid=rid, run_id="gpus", device=f"cuda:{rid % 2}") for rid in (6, 7, 8)]
    assert [r.id for r in suite_results(gpus, "gpu")["mlp"]] == [6, 8]
    chosen = suite_results([older, *repeats], "cpu")
    assert [r.id for r in chosen["mlp"]] == [2, 3, 4]
    score = compute_score(chosen, {"mlp": (make("mlp", [0.2] * 5, rid=9, run_id="ref"),)}, "cpu")
    (item,) = score.items
    assert item.speedup == pytest.approx((640 * 320 * 640) ** (1 / 3) / 320)
    assert item.as_dict()["ours"] == {"id": 4, "trials": [2, 3, 4], "device_name": "cpu name",
                                      "samples_per_s": pytest.approx((640 * 320 * 640) ** (1 / 3))}
    # constant steps: only the repeats vary, so the CI spans what redrawing them gives, from
    # all three slow (320/320 = 1.0) to all fast (640/320 = 2.0), never past either
    low, high = score.ci
    assert 1.0 <= low < item.speedup < high <= 2.0
    # with one trial a side the interval is the step-level bootstrap alone: a point here
    single = compute_score({"mlp": repeats[:1]}, {"mlp": (make("mlp", [0.2] * 5),)}, "cpu")
    assert single.ci == (pytest.approx(2.0), pytest.approx(2.0))


def test_this_machines_results_are_its_host_cpu_and_instruction_sets(tmp_path):
    # A run stored under this host name and CPU model but another CPU generation (other key
    # instruction sets, as the dev VM between days) is not this machine's.
    from rigbench.api.comparison import this_machine_results
    from rigbench.fingerprint import machine_fingerprint

    here = machine_fingerprint()
    flipped = {name: not value for name, value in here["cpu_flags"].items()}
    db = str(tmp_path / "mine.db")
    store = _store(db, here, "now", 1.0)
    store.add_run("then", "2026-01-01T00:00:00+00:00", "rigbench run", {**here, "cpu_flags": flipped})
    store.add_result(make("mlp", TIMES, run_id="then"))
    store.add_run("moved", "2026-01-01T00:00:00+00:00", "rigbench run", {**here, "kernel": "x", "os": "y"})
    store.add_result(make("cnn", TIMES, run_id="moved"))  # a new kernel: still this machine
    assert {r.run_id for r in this_machine_results(Store(db))} == {"now", "moved"}


def test_score_names_the_busy_trials_it_rests_on(tmp_path):
    from typer.testing import CliRunner

    from rigbench import cli

    db = str(tmp_path / "mine.db")
    store = Store(db)
    store.add_run("minerun", "2026-01-01T00:00:00+00:00", "rigbench run", MINE)
    busy = make("mlp", TIMES, run_id="minerun")
    busy.metrics.others_cpu_pct_mean = 55.0
    rid = store.add_result(busy)
    store.add_result(make("cnn", TIMES, run_id="minerun"))
    done = CliRunner().invoke(cli.app, ["score", "minerun", "--reference", "minerun", "--db", db],
                              env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    assert f"  busy: other processes used 55% of this machine's CPU while trial {rid} was timed" in done.output


def test_a_cpu_run_against_a_gpu_only_reference_says_the_device_classes_differ(tmp_path):
    """`score --reference h100-sxm-80gb` on a CPU-only machine: the reason is that a score sets cpu
    against cpu and gpu against gpu, not that nothing was run (exit 2 stays: a UsageError)."""
    db = str(tmp_path / "mine.db")
    _store(db, MINE, "minerun", 1.0)
    with pytest.raises(UsageError, match=r"reference machine h100-sxm-80gb measured the suite on gpu only, and run "
                                         r"minerun on cpu only: a score sets cpu against cpu and gpu against gpu"):
        api.score("minerun", "h100-sxm-80gb", db=db)


def test_a_run_whose_trials_were_all_left_out_says_which_and_why(tmp_path):
    """A run of mlp with --threads 1 (and cnn at batch 32) holds no suite trial: the error names
    the trials and the settings that kept them out."""
    db = str(tmp_path / "mine.db")
    store = Store(db)
    store.add_run("t1run", "2026-01-01T00:00:00+00:00", "rigbench run mlp --threads 1", MINE)
    one = make("mlp", TIMES, run_id="t1run")
    one.spec = one.spec.model_copy(update={"threads": 1})
    mlp_id = store.add_result(one)
    cnn_id = store.add_result(make("cnn", TIMES, run_id="t1run", batch=32))
    with pytest.raises(UsageError) as caught:
        api.score("t1run", db=db)
    message = str(caught.value)
    assert message.startswith(f"no suite result in run t1run: its trials of suite workloads were left out for their "
                              f"settings (#{mlp_id} mlp: threads 1; #{cnn_id} cnn: batch_size 32)")
    assert "run `rigbench run`" in message


def test_list_references_lists_and_refuses_what_it_would_ignore():
    from typer.testing import CliRunner

    from rigbench import cli

    done = CliRunner().invoke(cli.app, ["score", "--list-references"])
    assert done.exit_code == 0 and {"dev-vm-epyc-2core", "h100-sxm-80gb", "h200-sxm-141gb"} <= set(done.output.split())
    done = CliRunner().invoke(cli.app, ["score", "--list-references", "--reference", "x"])
    assert done.exit_code == 2 and "--list-references only lists the shipped reference machines" in done.output


def test_score_of_a_database_of_other_machines_says_how_to_score_them(tmp_path):
    """An imported bundle (another machine's) looked like nothing to score: the refusal now says
    the results are there and that `score RUN` scores them."""
    db = str(tmp_path / "imported.db")
    store = Store(db)
    store.add_run("theirs", "2026-01-01T00:00:00+00:00", "rigbench run", THEIRS)
    store.add_result(make("mlp", TIMES, run_id="theirs"))
    with pytest.raises(UsageError, match=r"\(1 stored results are other machines': `rigbench score RUN` scores"):
        api.score(db=db)
    assert api.score("theirs", "dev-vm-epyc-2core", db=db).scores  # and so it does


def test_score_of_this_machine_says_how_many_results_of_other_machines_it_left_out(tmp_path):
    from typer.testing import CliRunner

    from rigbench import cli
    from rigbench.fingerprint import this_machine_identity

    db = str(tmp_path / "mixed.db")
    store = Store(db)
    store.add_run("mine", "2026-01-01T00:00:00+00:00", "rigbench run", this_machine_identity())
    store.add_run("theirs", "2026-01-01T00:00:00+00:00", "rigbench run", THEIRS)
    store.add_result(make("mlp", TIMES, run_id="mine"))
    store.add_result(make("mlp", TIMES, run_id="theirs"))
    done = CliRunner().invoke(cli.app, ["score", "--db", db])
    assert done.exit_code == 0, done.output
    assert "Left out: 1 stored results of other machines (`rigbench score RUN` scores one of their runs)." \
        in " ".join(done.output.split())


def _ar1_times(phi, n=60, seed=7):
    """Step times whose logs are AR(1) with lag-1 correlation `phi` (the dev VM's reference steps
    show 0.43), CV about 10%."""
    rng = np.random.default_rng(seed)
    logs = [rng.normal(0.0, 0.1)]
    for _ in range(n - 1):
        logs.append(phi * logs[-1] + rng.normal(0.0, 0.1 * math.sqrt(1 - phi * phi)))
    return [0.1 * math.exp(x) for x in logs]


def test_with_repeats_on_both_sides_the_ci_is_welchs_over_trials():
    """Constant steps make each trial's samples/s exact. mlp: ours 640 and 320 samples/s, the
    reference 320 twice; cnn: ours 1,280 twice, the reference 1,280 and 640. Each speed-up is
    sqrt(2), so the score is sqrt(2); in logs each workload differs by ln2 / 2, and the two sides
    that vary have a variance of their mean of (ln2)^2 / 4 each: over 2^2 workloads, se^2 =
    (ln2)^2 / 8, df = 2 (t 4.303), so the CI is exp(ln2 / 2 +- 4.303 ln2 / sqrt(8)). The
    bootstrap of two trials a side would draw only what those two trials show."""
    ours = {"mlp": (make("mlp", [0.1] * 5), make("mlp", [0.2] * 5)), "cnn": (make("cnn", [0.1] * 5),) * 2}
    reference = {"mlp": (make("mlp", [0.2] * 5),) * 2, "cnn": (make("cnn", [0.1] * 5), make("cnn", [0.2] * 5))}
    score = compute_score(ours, reference, "cpu")
    assert score.value == pytest.approx(math.sqrt(2)) and score.ci_covers == "repeats"
    half = 4.303 * math.log(2) / math.sqrt(8)
    assert score.ci == (pytest.approx(math.exp(math.log(2) / 2 - half)), pytest.approx(math.exp(math.log(2) / 2 + half)))
    # one side of one workload with a single trial: the bootstrap again, which stays within
    # what its draws can give (here mlp 1-2 times, cnn 1-2 times)
    partial = compute_score(ours, {**reference, "mlp": reference["mlp"][:1]}, "cpu")
    assert partial.ci_covers == "repeats in part" and 1.0 <= partial.ci[0] < partial.ci[1] <= 2.0


def test_score_resamples_correlated_steps_in_blocks():
    """A trial's steps are drawn in runs of (1 + r) / (1 - r) consecutive ones: drawn one by one,
    correlated steps looked as informative as independent ones, and the score's CI held 1.0 for a
    machine against itself in 75-78% of simulated cases (benchmarks/stats_calibration.py)."""
    correlated = np.asarray(_ar1_times(0.8))
    assert block_length(np.asarray(sorted(TIMES * 12))) == 19  # a ramp: r read as MAX_LAG1 0.9, 1.9 / 0.1
    assert block_length(np.asarray(sorted(TIMES * 8))) == 14  # at most a quarter of the steps
    assert block_length(correlated) > 1 and block_length(np.asarray([0.1, 0.2] * 20)) == 1  # r < 0 reads as 0

    def spread(times):
        r = make("mlp", list(times))
        speeds = _resampled_speed(r, np.random.default_rng(0), 2000)
        low, high = np.percentile(speeds, [2.5, 97.5])
        return high / low

    shuffled = np.random.default_rng(1).permutation(correlated)  # the same steps, their order lost
    assert block_length(shuffled) == 1  # (the interval's width in logs: 3 times as wide at r 0.82 here)
    assert math.log(spread(correlated)) > 2 * math.log(spread(shuffled))


def test_one_step_at_a_time_is_kept_for_independent_steps():
    """With no correlation (block 1) the draws are the plain bootstrap's, number for number."""
    times = np.asarray(np.random.default_rng(3).permutation(_ar1_times(0.0)))
    assert block_length(times) == 1
    r = make("mlp", list(times))
    plain = r.spec.batch_size / np.median(times[np.random.default_rng(5).integers(0, times.size, size=(100, times.size))],
                                          axis=1)
    assert np.array_equal(_resampled_speed(r, np.random.default_rng(5), 100), plain)
