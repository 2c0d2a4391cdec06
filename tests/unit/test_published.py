"""Published tables: loading and unit conversion, the workload mapping, and the ratios of
`rigbench compare --published` against numbers worked out by hand."""

import json
from importlib import resources

import pytest

from rigbench.analysis.peaks import Peak, peak_resolver, prediction_text, ratio_by_clock
from rigbench.analysis.published import compare_published
from rigbench.analysis.published_tables import MAPPINGS, SOURCES, framework_family, published_rows
from rigbench.spec import Metrics, Result, TrialSpec
from rigbench.store import Store
from rigbench.workloads import WORKLOADS, parse_workload_ref

FLOPS = 40e6  # per sample, made up for the hand computations


def ours(workload="cnn", batch=128, samples_per_s=256.0, util=50.0, threads=2, rid=1, **options):
    spec = TrialSpec(workload=workload, workload_options=options, device="cpu", batch_size=batch)
    return Result(id=rid, run_id="r", created_at="2026-01-01T00:00:00+00:00", spec=spec, status="ok",
                  device_name="Test CPU", threads=threads, software={"torch": "2.13.0"},
                  metrics=Metrics(samples_per_s=samples_per_s, cpu_util_pct_mean=util, flops_per_sample=FLOPS))


PEAKS = {"NVIDIA GeForce GTX 1060 6GB": 4e12, "Test CPU": 1e11,
         "Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz": 2e11}


def fake_peak(name, kind, machine=None):
    return Peak(PEAKS[name], f"test peak of {name}") if name in PEAKS else None


def test_every_shipped_table_has_its_source():
    folder = resources.files("rigbench.analysis").joinpath("data/published")
    readme = folder.joinpath("README.md").read_text(encoding="utf-8")
    tables = sorted(p.name for p in folder.iterdir() if p.name.endswith(".csv"))
    assert tables == ["community_epoch_times.csv", "shi2016_table7.csv", "yin2020_accuracy.csv",
                      "yin2020_batch_sweep.csv", "yin2020_cpu_vs_gpu.csv"]
    for name in tables:
        assert f"| {name} |" in readme
    for source in ("Yin", "arXiv:1608.07249", "fleuret.org"):
        assert source in readme


def test_rows_in_steps_per_second():
    rows = published_rows()
    yin128 = [r for r in rows if r.source == "yin2020" and r.batch_size == 128]
    # batch 128 comes from Table 5 only (the sweep repeats it): 3 frameworks x (GPU, CPU)
    assert len(yin128) == 6 and {r.table for r in yin128} == {"yin2020_cpu_vs_gpu.csv"}
    gpu = next(r for r in yin128 if r.framework == "PyTorch 1.4.0" and r.device == "GTX 1060")
    assert (gpu.steps_per_s, gpu.cpu_usage_pct) == (11.917, 7.44)
    sweep = [r for r in rows if r.table == "yin2020_batch_sweep.csv"]
    assert len(sweep) == 27 - 3 - 2  # batch 128 and TensorFlow's two empty cells left out
    shi = next(r for r in rows if r.network == "ResNet-56" and r.framework == "Torch" and r.device == "GTX 1080")
    assert shi.steps_per_s == pytest.approx(1 / 0.101)
    t2 = next(r for r in rows if r.network == "ResNet-56" and r.framework == "Torch" and r.threads == 2)
    assert (t2.device_kind, t2.steps_per_s) == ("cpu", pytest.approx(1 / 3.222))
    mx150 = next(r for r in rows if r.source == "community" and "MX150" in r.device)
    assert mx150.steps_per_s == pytest.approx(20_000 / 678 / 16)  # 1,250 steps of 16 in 678 s


def test_mappings_name_real_workloads():
    for m in MAPPINGS:
        workload, options = parse_workload_ref(m.ref)
        assert workload.name in WORKLOADS and m.source in SOURCES
        assert m.closeness in ("same network", "same family", "loose") and m.why
    assert framework_family("PyTorch 1.4.0") == framework_family("Torch") == "torch"
    assert framework_family("TF") == framework_family("TensorFlow (Keras)") == "tensorflow"
    assert framework_family("PlaidML (Keras)") == "plaidml"


def test_thesis_rows_beside_ours_by_hand():
    found = compare_published([ours()], ["yin2020"], fake_peak)
    # our framework is torch: only the thesis's PyTorch rows, its GTX 1060 and its i7-8650U
    assert [(m.row.framework, m.row.device) for m in found.matches] == [
        ("PyTorch 1.4.0", "GTX 1060"), ("PyTorch 1.4.0", "i7-8650U")]
    gpu, cpu = found.matches
    assert gpu.ours_steps_per_s == 2.0                               # 256 samples/s / 128
    assert gpu.measured == pytest.approx(11.917 / 2)
    assert gpu.paper_ratio == pytest.approx(11.917 / 4.192)
    assert gpu.predicted == pytest.approx(4e12 / 1e11)
    assert gpu.paper_predicted == pytest.approx(4e12 / 2e11)
    assert gpu.normalised == pytest.approx(11.917 / 2 * 0.50)      # our CPU was 50% busy
    assert gpu.paper_normalised == pytest.approx(11.917 / 4.192 * 0.6449)
    assert cpu.measured == pytest.approx(4.192 / 2)
    assert cpu.predicted == pytest.approx(2.0)
    assert cpu.normalised == pytest.approx(4.192 / 2 * 0.50 / 0.6449)  # both sides scaled to 100%
    assert cpu.paper_ratio is None
    text = " ".join(gpu.notes)
    # FLOP/s from the numbers: 11.917 steps/s x 128 x 40 MFLOP = 61.0 GFLOP/s = 1.5% of 4 TFLOP/s;
    # ours 2 x 128 x 40e6 = 10.2 GFLOP/s = 10.2% of 0.1 TFLOP/s
    assert "61.0 GFLOP/s = 1.5% of its peak" in text and "10.2 GFLOP/s = 10.2% of its peak" in text
    assert "predict x40 (0.15 of the prediction)" in text
    assert "x2.98" in text and "nearer the spec-sheet prediction" not in text
    assert found.missing == []
    everything = compare_published([ours()], ["yin2020"], fake_peak, all_frameworks=True)
    assert len(everything.matches) == 6


def test_repeats_count_as_their_mean_and_an_older_run_is_superseded():
    older = ours(samples_per_s=512.0, rid=1).model_copy(update={"run_id": "older"})
    repeats = [ours(samples_per_s=v, rid=i) for i, v in ((2, 128.0), (3, 512.0))]  # geometric mean 256
    found = compare_published([older, *repeats], ["yin2020"], fake_peak)
    gpu = found.matches[0]
    assert gpu.ours_steps_per_s == pytest.approx(2.0) and gpu.ours_trials == [2, 3] and gpu.ours is repeats[-1]
    assert gpu.measured == pytest.approx(11.917 / 2)
    mine = gpu.as_dict()["ours"]
    assert (mine["id"], mine["trials"], mine["samples_per_s"]) == (3, [2, 3], pytest.approx(256.0))


def test_missing_results_say_what_to_run():
    found = compare_published([ours(workload="mlp", batch=64)], [], fake_peak)
    missing = {m.mapping.network: m.command for m in found.missing}
    assert missing["CIFAR-10 CNN"] == "rigbench run cnn -b 4,8,16,32,64,128,256,512,1024"
    assert missing["ResNet-56"] == "rigbench run resnet:depth=56 -b 128"
    assert "FCN-S" not in missing  # mlp at 64 is stored
    fcn = [m for m in found.matches if m.row.network == "FCN-S"]
    # Torch only; three GPUs and the desktop CPU at our 2 threads (0.710 s/batch)
    assert sorted(m.row.device for m in fcn) == ["GTX 1080", "GTX 980", "Tesla K80", "desktop CPU"]
    gtx980 = next(m for m in fcn if m.row.device == "GTX 980")
    assert gtx980.paper_cpu.threads == 2 and gtx980.paper_ratio == pytest.approx(0.710 / 0.040)
    assert gtx980.predicted is None and "No spec-sheet peak for the GTX 980" in " ".join(gtx980.notes)


def test_resnet_needs_depth_56():
    assert not [m for m in compare_published([ours("resnet")], ["shi2016"], fake_peak).matches
                if m.row.network == "ResNet-56"]
    found = compare_published([ours("resnet", depth=56)], ["shi2016"], fake_peak)
    assert {m.row.network for m in found.matches} == {"ResNet-56"}


def test_peaks_from_spec_sheet_or_calibration(tmp_path):
    from rigbench.store.calibrations import add_calibration

    store = Store(str(tmp_path / "c.db"))
    peak_of = peak_resolver(store)
    assert peak_of("Never Seen CPU 9000", "cpu") is None
    from rigbench.fingerprint import this_machine_identity

    # another machine's calibration of a CPU of the same name (an imported bundle) is not ours
    store.add_run("cal0", "2026-04-01T00:00:00+00:00", "rigbench calibrate", {"hostname": "elsewhere"})
    add_calibration(store, "cal0", "2026-04-01T00:00:00+00:00", {
        "device": "cpu", "device_name": "Never Seen CPU 9000",
        "measurements": [{"kind": "matmul", "precision": "fp32", "status": "ok", "value": 9e12, "unit": "FLOP/s"}],
    })
    assert peak_of("Never Seen CPU 9000", "cpu") is None
    store.add_run("cal1", "2026-03-01T00:00:00+00:00", "rigbench calibrate", this_machine_identity())
    add_calibration(store, "cal1", "2026-03-01T00:00:00+00:00", {
        "device": "cpu", "device_name": "Never Seen CPU 9000",
        "measurements": [{"kind": "matmul", "precision": "fp32", "status": "ok", "value": 1.5e11, "unit": "FLOP/s"}],
    })
    calibrated = peak_of("Never Seen CPU 9000", "cpu")
    assert calibrated.flops == 1.5e11 and calibrated.basis.startswith("calibrated")
    # `compare --published --run` of the other machine's run reads that machine's peak
    from rigbench.fingerprint import machine_key

    assert peak_resolver(store, machine_key({"hostname": "elsewhere"}))("Never Seen CPU 9000", "cpu").flops == 9e12
    # `--run HERE --run ELSEWHERE`: each trial's CPU is read at its own machine's calibration (the
    # command's machine gave the other CPU no peak, so no prediction)
    machines = {"here": this_machine_identity(), "there": {"hostname": "elsewhere"}}
    here, there = ours(rid=1), ours(rid=2)
    here.device_name = there.device_name = "Never Seen CPU 9000"
    here.run_id, there.run_id = "here", "there"
    found = compare_published([here, there], ["yin2020"], peak_of, machines=machines).matches
    assert sorted({(m.ours.run_id, m.peak_ours.flops) for m in found}) == [("here", 1.5e11), ("there", 9e12)]
    sheet = peak_of("NVIDIA GeForce GTX 1060 6GB", "gpu")
    assert sheet.basis.startswith("spec sheet") and sheet.flops > 1e12


def test_a_peak_the_trial_beat_is_called_out():
    def low_peak(name, kind, machine=None):  # 1 GFLOP/s, but the trial did 2 x 128 x 40 MFLOP = 10.2 GFLOP/s
        return Peak(1e9, "calibrated matmul peak (2026-01-01)") if name == "Test CPU" else fake_peak(name, kind)

    gpu = compare_published([ours()], ["yin2020"], low_peak).matches[0]
    assert "Our trial beat our peak (calibrated matmul peak (2026-01-01))" in " ".join(gpu.notes)


def test_unknown_source_is_a_usage_error(tmp_path):
    from rigbench import api
    from rigbench.errors import UsageError

    with pytest.raises(UsageError, match="unknown published source 'nope': choose from yin2020, shi2016, community"):
        api.compare_published(db=str(tmp_path / "x.db"), sources=["nope"])


# ---------------------------------------------------------------- CPU clock assumption: a range

I5_8250U = "Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz"


def test_the_thesis_prediction_is_a_range_over_the_cpu_clock():
    """GTX 1060 (4.375 TFLOP/s) over the i7-8650U: 4 cores x 2 FMA x 8 fp32 lanes x 2 FLOPs =
    128 FLOPs/cycle, so 537.6 GFLOP/s at the 4.2 GHz turbo and 243.2 at the 1.9 GHz base."""
    cpu = ours(rid=1)
    cpu.device_name = I5_8250U            # 128 FLOPs/cycle: 435.2 GFLOP/s at 3.4 GHz, 204.8 at 1.6 GHz
    gpu, _ = compare_published([cpu], ["yin2020"], peak_resolver(None)).matches
    assert gpu.paper_predicted == pytest.approx(4375 / 537.6)                       # x8.14
    assert gpu.paper_predicted_by_clock == pytest.approx({"max_turbo": 4375 / 537.6, "base": 4375 / 243.2})
    assert gpu.predicted_by_clock == pytest.approx({"max_turbo": 4375 / 435.2, "base": 4375 / 204.8})
    text = " ".join(gpu.notes)
    assert "against x8.14-18 (CPU at max turbo .. base clock) from the spec sheets" in text
    assert "predict x10.1-21.4 (CPU at max turbo .. base clock; 0.59-0.28 of the prediction)" in text
    d = gpu.as_dict()
    assert d["paper_predicted_clocks"] == "CPU at max turbo .. base clock"
    assert d["paper_predicted_speedup_range"] == pytest.approx([4375 / 537.6, 4375 / 243.2])
    assert d["peak_ours"]["fp32_flops_by_clock"] == {"max_turbo": 435.2e9, "base": 204.8e9}


def test_a_prediction_without_cpu_clocks_stays_one_figure():
    gpu = compare_published([ours()], ["yin2020"], fake_peak).matches[0]
    assert gpu.predicted_by_clock == {} and prediction_text(gpu.predicted, {}) == "x40"
    assert gpu.as_dict()["predicted_clocks"] is None and gpu.as_dict()["predicted_speedup_range"] is None
    assert ratio_by_clock(Peak(4e12, "gpu"), Peak(1e11, "cpu", by_clock=(("max_turbo", 1e11), ("base", 5e10)))) \
        == {"max_turbo": 40.0, "base": 80.0}


def test_compare_published_prints_the_range(tmp_path):
    from typer.testing import CliRunner

    from rigbench import cli

    db = str(tmp_path / "p.db")
    store = Store(db)
    store.add_run("r", "2026-01-01T00:00:00+00:00", "rigbench run cnn", {})
    result = ours(rid=None)
    result.device_name = I5_8250U
    store.add_result(result)
    shown = CliRunner().invoke(cli.app, ["compare", "--published", "yin2020", "--run", "r", "--db", db],
                               env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.stdout.split())                          # long lines wrap
    assert "x10.1-21.4" in text                                    # the table's predicted column
    assert "predicted ranges: CPU at max turbo .. base clock" in text
    assert "FP32 peak, i7-8650U: 0.538 TFLOP/s at max turbo, 0.243 at base clock" in text
    assert "x8.14-18 (CPU at max turbo .. base clock)" in text
    # what both rows' notes say is said once, before the rows' own
    framework = "Same framework family, but PyTorch 1.4.0 there and torch"
    assert text.count(framework) == 1 and text.index("every row: ") < text.index(framework) < text.index("#1: ")
    assert text.index("Columns: ours = our trial") < text.index("yin2020: Yin 2020")  # the key before the table
    as_json = CliRunner().invoke(cli.app, ["compare", "--published", "yin2020", "--run", "r", "--db", db, "--json"])
    gpu = json.loads(as_json.stdout)["matches"][0]
    assert gpu["paper_predicted_speedup_by_clock"] == pytest.approx({"max_turbo": 4375 / 537.6, "base": 4375 / 243.2})
    assert gpu["predicted_clocks"] == "CPU at max turbo .. base clock"


def test_catsdogs_of_the_old_network_is_not_the_published_one():
    # revision 1 (a reconstruction from the slides) is another network: only revision 2, the
    # notebook's network, stands beside the published cats-vs-dogs rows
    new = ours("catsdogs", batch=16, samples_per_s=2.0)
    old = ours("catsdogs", batch=16, samples_per_s=2.0, rid=2)
    old.spec = old.spec.model_copy(update={"workload_revision": 1})
    assert {m.row.network for m in compare_published([new], ["community"], fake_peak).matches} == {"cats vs dogs CNN"}
    found = compare_published([old], ["community"], fake_peak)
    assert found.matches == [] and {m.mapping.network for m in found.missing} == {"cats vs dogs CNN"}


def test_a_busy_trial_of_ours_is_named_in_the_notes():
    busy = ours()
    busy.metrics.others_cpu_pct_mean = 47.0
    gpu = compare_published([busy], ["yin2020"], fake_peak).matches[0]
    assert ("Our figure is busy: other processes used 47% of the CPU while it was timed, so it is this "
            "machine under that load.") in gpu.notes
    quiet = compare_published([ours()], ["yin2020"], fake_peak).matches[0]
    assert not any("busy:" in note for note in quiet.notes)
    noisy = ours()
    noisy.metrics = noisy.metrics.model_copy(update={"noisy": True, "step_time_cv": 0.16, "others_cpu_pct_mean": 3.0})
    assert ("Our steps vary (step-time CV 16%, noisy): the machine was quiet (others used 3% of the CPU), so some "
            "steps stalled or the work itself varies; its interval says how well the figure is known."
            ) in compare_published([noisy], ["yin2020"], fake_peak).matches[0].notes


# ---------------------------------------------------------------- audit fixes

def test_data_parallel_trials_are_not_plain_speed_trials():
    """A 2-process trial (global batch 128, its samples/s over both ranks) and a 1-rank trial under
    the data-parallel wrapper are other configurations: the FCN-S rows stand beside the one-process
    mlp trial, at its samples/s over its batch, even though the data-parallel ones are newer."""
    single = ours("mlp", batch=64, samples_per_s=980.0, rid=1)
    two = ours("mlp", batch=64, samples_per_s=297.0, rid=2)
    two.spec = two.spec.model_copy(update={"world_size": 2})
    two.metrics.global_batch = 128
    wrapped = ours("mlp", batch=64, samples_per_s=500.0, rid=3)
    wrapped.spec = wrapped.spec.model_copy(update={"data_parallel": True})
    found = compare_published([single, two, wrapped], ["shi2016"], fake_peak)
    fcn = [m for m in found.matches if m.row.network == "FCN-S"]
    assert fcn and {tuple(m.ours_trials) for m in fcn} == {(1,)}
    assert fcn[0].ours_steps_per_s == pytest.approx(980 / 64)
    only_parallel = compare_published([two, wrapped], ["shi2016"], fake_peak)
    assert not only_parallel.matches and "FCN-S" in {m.mapping.network for m in only_parallel.missing}


def sheet_peak(name, kind, machine=None):
    """The spec sheets' peaks (published devices), with a made-up peak and bandwidth for ours."""
    return Peak(1e11, "test peak", 10e9) if name == "Test CPU" else peak_resolver(None)(name, kind)


def test_the_memory_note_takes_the_rooflines_intensity():
    """mlp at b64 (COMPARING.md's roofline example): 56.88 MFLOP and 2.07 MB per sample, 10,020,874
    parameters under SGD (x4 B x5). By hand: 64 x 56.88e6 = 3.640 GFLOP over 64 x 2.07e6 + 200.4e6
    = 332.9 MB is 10.9 FLOP/byte, below the GTX 1080's ridge (8.873 TFLOP/s / 320 GB/s = 28)."""
    from rigbench.analysis.roofline import result_roofline

    r = ours("mlp", batch=64, samples_per_s=1500.0)
    r.metrics = r.metrics.model_copy(update={"flops_per_sample": 56.88e6, "bytes_per_sample": 2.07e6,
                                             "params": 10_020_874})
    gtx1080 = next(m for m in compare_published([r], ["shi2016"], sheet_peak).matches if m.row.device == "GTX 1080")
    assert result_roofline(r, None).intensity == pytest.approx(64 * 56.88e6 / (64 * 2.07e6 + 10_020_874 * 20))
    assert "At 10.9 FLOP/byte the network is below the GTX 1080's ridge point (28 FLOP/byte)" in " ".join(gtx1080.notes)


def test_a_thread_column_of_the_desktop_cpu_is_set_against_that_many_cores():
    """Shi et al.'s i7-3820 has 4 cores (hardware.toml): 4 x 1 multiply-add x 8 lanes x 2 x 3.8 GHz
    = 243.2 GFLOP/s, 230.4 at the 3.6 GHz base. Its 2-thread column runs on 2 cores: 121.6 and
    115.2. FCN-S Torch at 2 threads is 0.710 s for 64 samples: at 40 MFLOP a sample 3.606 GFLOP/s,
    3.0% of 121.6 (not 1.5% of 243.2). The GTX 980 (4.981 TFLOP/s) over that CPU: x41.0-43.2."""
    found = compare_published([ours("mlp", batch=64, threads=2)], ["shi2016"], sheet_peak)
    cpu = next(m for m in found.matches if m.row.device == "desktop CPU")
    assert cpu.row.threads == 2 and cpu.peak_published.flops == pytest.approx(121.6e9)
    assert dict(cpu.peak_published.by_clock) == pytest.approx({"max_turbo": 121.6e9, "base": 115.2e9})
    assert "3.6 GFLOP/s = 3.0% of its peak on 2 of its 4 cores at max turbo (3.1% at base clock)" in " ".join(cpu.notes)
    assert cpu.as_dict()["peak_published"]["cores_used"] == 2
    gtx980 = next(m for m in found.matches if m.row.device == "GTX 980")
    assert gtx980.paper_predicted_by_clock == pytest.approx({"max_turbo": 4981 / 121.6, "base": 4981 / 115.2})
    assert "desktop CPU, 2 threads ratio is x17.8 against x41-43.2" in " ".join(gtx980.notes)
    # 8 threads on 4 cores (Hyper-Threading) add no FMA units: the whole 243.2 (FCN-R at b1024 has
    # an 8-thread Torch column; FCN-S's is empty in the source)
    eight = compare_published([ours("mlp", batch=1024, threads=8)], ["shi2016"], sheet_peak)
    cpu8 = next(m for m in eight.matches if m.row.device == "desktop CPU")
    assert cpu8.row.threads == 8 and cpu8.peak_published.flops == pytest.approx(243.2e9)
    assert cpu8.row.label() == "FCN-R · Torch · desktop CPU, 8 threads · b1024"
    assert cpu.row.device_label() == "desktop CPU, 2 threads"
    one = published_rows(["shi2016"])
    assert any(r.label() == "FCN-S · Torch · desktop CPU, 1 thread · b64" for r in one)


def test_repeats_normalise_by_their_mean_cpu_use():
    """Two repeats at 128 and 512 samples/s (geometric mean 256, 2 steps/s) that kept the CPU 40% and
    80% busy: the normalised ratio takes their mean use, 60%, not the newest trial's 80%."""
    repeats = [ours(samples_per_s=128.0, util=40.0, rid=1), ours(samples_per_s=512.0, util=80.0, rid=2)]
    gpu = compare_published(repeats, ["yin2020"], fake_peak).matches[0]
    assert gpu.ours_cpu_pct == pytest.approx(60.0)
    assert gpu.normalised == pytest.approx(11.917 / 2 * 0.60)
    assert gpu.as_dict()["ours"]["cpu_util_pct_mean"] == pytest.approx(60.0)
    assert "Our run kept 60% of the machine's logical cores busy" in " ".join(gpu.notes)
