"""Energy (issue 13): the counters' readings, their window summary and a trial's energy figures.

The NVML reader runs against a fake library object and RAPL against a fake powercap tree made
here: the real code paths run, only the hardware is fake."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from rigbench.child_report import ChildReport
from rigbench.runner.assemble import build_result
from rigbench.runner.launchers import Outcome
from rigbench.spec import EpochRecord, TrainOptions, TrialSpec
from rigbench.trackers.energy import GPU_COUNTER, GPU_POWER, EnergyMeter
from rigbench.trackers.sampler import Tracker
from rigbench.trackers.summary import counter_delta, summarize
from tests.unit.fakes import FakeNVML

HANDLE = ("handle", 0)


def _powercap(root: Path, package_uj: int = 1_000_000, dram_uj: int = 500_000) -> Path:
    """One socket as sysfs shows it: package zone with a dram subzone."""
    for zone, name, value in (("intel-rapl:0", "package-0", package_uj),
                              ("intel-rapl:0/intel-rapl:0:0", "dram", dram_uj)):
        d = root / zone
        d.mkdir(parents=True)
        (d / "name").write_text(name + "\n")
        (d / "energy_uj").write_text(f"{value}\n")
        (d / "max_energy_range_uj").write_text("262143328850\n")
    (root / "intel-rapl:0:0").symlink_to(root / "intel-rapl:0" / "intel-rapl:0:0")
    return root


def _set_uj(root: Path, package_uj: int, dram_uj: int) -> None:
    (root / "intel-rapl:0" / "energy_uj").write_text(f"{package_uj}\n")
    (root / "intel-rapl:0" / "intel-rapl:0:0" / "energy_uj").write_text(f"{dram_uj}\n")


def test_gpu_counter_reads_joules_since_the_meter_started():
    meter = EnergyMeter(FakeNVML(1, energy_step_mj=2_500), HANDLE, rapl_root=None)
    assert meter.methods == {"gpu": GPU_COUNTER} and meter.notes == {}
    assert meter.read(1.0) == {"gpu_energy_j": pytest.approx(2.5)}
    assert meter.read(2.0) == {"gpu_energy_j": pytest.approx(5.0)}
    assert meter.describe() == ("gpu: nvml-counter", None)


def test_gpu_without_counter_integrates_power_and_says_so():
    meter = EnergyMeter(FakeNVML(1), HANDLE, rapl_root=None)  # energy query: Not Supported
    assert meter.methods == {"gpu": GPU_POWER}
    assert "Not Supported" in meter.notes["gpu"]
    assert meter.read(10.0, 100.0) == {"gpu_energy_j": 0.0}
    assert meter.read(10.5, 200.0)["gpu_energy_j"] == pytest.approx(75.0)  # trapezoid: 0.5 s x 150 W
    assert meter.read(11.5, None) == {}  # a sample without power adds nothing
    method, note = meter.describe()
    assert method == "gpu: nvml-power-integrated" and note and note.startswith("gpu: no NVML energy counter")


def test_gpu_counter_that_stops_answering_is_dropped_with_the_reason():
    nvml = FakeNVML(1, energy_step_mj=1_000)
    meter = EnergyMeter(nvml, HANDLE, rapl_root=None)
    nvml.energy_step_mj = None
    assert meter.read(1.0) == {}
    assert "gpu" not in meter.methods and "stopped answering" in meter.notes["gpu"]


def test_rapl_package_and_dram_through_a_fake_powercap_tree(tmp_path):
    root = _powercap(tmp_path / "powercap")
    meter = EnergyMeter(rapl_root=root)
    assert meter.methods == {"cpu": "rapl-dram+package"}
    _set_uj(root, 4_000_000, 1_500_000)
    assert meter.read(1.0) == {"cpu_energy_j": pytest.approx(3.0), "dram_energy_j": pytest.approx(1.0)}


def test_rapl_unavailable_is_a_reason_not_a_guess(tmp_path):
    meter = EnergyMeter(rapl_root=tmp_path / "no-powercap")
    assert meter.methods == {} and meter.read(1.0) == {}
    method, note = meter.describe()
    assert method is None and note and note.startswith("cpu: ") and "powercap" in note


def test_counter_delta_interpolates_at_the_window_edges():
    samples = [{"t": 0.0, "k": 0.0}, {"t": 1.0, "k": 10.0}, {"t": 2.0, "k": 30.0}, {"t": 3.0}]
    assert counter_delta(samples, "k", 0.5, 1.5) == pytest.approx(20.0 - 5.0)
    assert counter_delta(samples, "k", 0.0, 2.0) == pytest.approx(30.0)
    assert counter_delta(samples, "k", 1.0, 1.0) == 0.0
    assert counter_delta(samples, "k", -0.1, 1.0) is None  # not covered: never extrapolated
    assert counter_delta(samples, "k", 0.5, 2.5) is None
    assert counter_delta(samples, "missing", 0.5, 1.5) is None
    summary = summarize(samples, 0.5, 1.5, interval_slack=0)
    assert summary["gpu_energy_j"] is None and summary["cpu_energy_j"] is None


def test_tracker_samples_cumulative_gpu_energy_from_the_counter(tmp_path):
    tracker = Tracker(os.getpid(), interval=0.05, gpu_index=0, nvml=FakeNVML(os.getpid(), energy_step_mj=1_000),
                      rapl_root=tmp_path / "none")
    tracker.start()
    deadline = time.monotonic() + 10
    while len(tracker.samples) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    samples = tracker.stop()
    energies = [s["gpu_energy_j"] for s in samples]
    assert energies == pytest.approx([1.0 * (i + 1) for i in range(len(samples))])
    method, note = tracker.energy_description()
    assert method == "gpu: nvml-counter" and note and note.startswith("cpu: ")


def _speed_outcome(samples, start=10.0, end=12.0, method="gpu: nvml-counter", note=None):
    report = ChildReport(status="ok", measure_start=start, measure_end=end, step_times_s=[0.1] * 20,
                         losses=[1.0] * 20, params=10, device_name="fake")
    return Outcome(reports=[report], samples=samples, returncode=0, energy_method=method, energy_note=note)


def _energy_samples(t0=9.0, t1=13.0, gpu_w=100.0, cpu_w=None):
    out, t = [], t0
    while t <= t1 + 1e-9:
        s = {"t": t, "gpu_energy_j": gpu_w * (t - t0)}
        if cpu_w is not None:
            s["cpu_energy_j"] = cpu_w * (t - t0)
        out.append(s)
        t += 0.1
    return out


def test_a_trials_energy_per_sample_and_total():
    spec = TrialSpec(workload="mlp", batch_size=8)
    result = build_result(spec, _speed_outcome(_energy_samples(cpu_w=20.0)), "run")
    m = result.metrics
    assert m.gpu_energy_j == pytest.approx(200.0) and m.cpu_energy_j == pytest.approx(40.0)
    assert m.dram_energy_j is None
    assert m.energy_j == pytest.approx(240.0)
    assert m.energy_per_sample_j == pytest.approx(240.0 / (20 * 8))
    assert m.energy_method == "gpu: nvml-counter" and m.energy_note is None
    row = result.row()
    assert row["energy_per_sample_j"] == pytest.approx(1.5) and row["energy_method"] == "gpu: nvml-counter"


def test_without_any_source_energy_is_absent_with_the_reason():
    spec = TrialSpec(workload="mlp", batch_size=8)
    samples = [{"t": 9.0 + 0.1 * i, "rss_bytes": 1.0} for i in range(40)]
    m = build_result(spec, _speed_outcome(samples, method=None, note="cpu: no powercap interface"), "run").metrics
    assert m.energy_j is None and m.energy_per_sample_j is None and m.gpu_energy_j is None
    assert m.energy_method is None and m.energy_note == "cpu: no powercap interface"


def test_a_window_shorter_than_the_counter_update_is_flagged():
    spec = TrialSpec(workload="mlp", batch_size=8)
    m = build_result(spec, _speed_outcome(_energy_samples(), start=10.0, end=10.4), "run").metrics
    assert m.gpu_energy_j == pytest.approx(40.0)
    assert m.energy_note and "each of its edges is read between two energy readings about 0.1 s apart: approximate" in m.energy_note


def test_training_energy_per_epoch_and_to_target():
    spec = TrialSpec(workload="mlp", batch_size=8, train=TrainOptions(dataset="digits", epochs=3, target_accuracy=0.9))
    epochs = [EpochRecord(epoch=i + 1, steps=10, train_loss=1.0, accuracy=acc, train_seconds=0.9,
                          eval_seconds=0.1, ended_at=10.0 + (i + 1) * 1.0) for i, acc in enumerate((0.5, 0.92, 0.95))]
    report = ChildReport(status="ok", measure_start=10.0, measure_end=13.0, epochs=epochs, train_samples=80,
                         device_name="fake")
    outcome = Outcome(reports=[report], samples=_energy_samples(t1=14.0), returncode=0, energy_method="gpu: nvml-counter")
    m = build_result(spec, outcome, "run").metrics
    assert m.energy_j == pytest.approx(300.0)
    assert m.energy_per_epoch_j == pytest.approx(100.0)
    assert m.epochs_to_target == 2 and m.energy_to_target_j == pytest.approx(200.0)
    assert m.energy_per_sample_j == pytest.approx(300.0 / (3 * 80))


class FakeAmdSmi:
    """Stands in for amdsmi: one GPU whose accumulator advances 1,000 ticks of 15.3 uJ per read."""

    def __init__(self, old_key: bool = False, supported: bool = True) -> None:
        self.ticks, self.old_key, self.supported = 0, old_key, supported

    def amdsmi_init(self):
        pass

    def amdsmi_get_processor_handles(self):
        return ["gpu0"]

    def amdsmi_get_energy_count(self, handle):
        if not self.supported:
            raise RuntimeError("AMDSMI_STATUS_NOT_SUPPORTED")
        self.ticks += 1000
        return {("power" if self.old_key else "energy_accumulator"): self.ticks, "counter_resolution": 15.3,
                "timestamp": 0}


@pytest.mark.parametrize("old_key", [False, True])
def test_amd_gpu_energy_from_the_amdsmi_accumulator(old_key):
    meter = EnergyMeter(rapl_root=None, amd_gpu=(FakeAmdSmi(old_key), "gpu0"))
    assert meter.methods == {"gpu": "amdsmi-counter"}
    assert meter.read(1.0) == {"gpu_energy_j": pytest.approx(1000 * 15.3 / 1e6)}


def test_amd_gpu_without_the_counter_says_why():
    meter = EnergyMeter(rapl_root=None, amd_gpu=(FakeAmdSmi(supported=False), "gpu0"))
    assert meter.methods == {} and "NOT_SUPPORTED" in meter.notes["gpu"]


def test_tracker_reads_an_amd_gpu_when_nvml_does_not_know_it(tmp_path):
    tracker = Tracker(os.getpid(), interval=0.05, gpu_index=0, nvml=FakeNVML(os.getpid(), init_fails=True),
                      rapl_root=None, amdsmi=FakeAmdSmi())
    tracker.start()
    deadline = time.monotonic() + 10
    while len(tracker.samples) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    samples = tracker.stop()
    assert samples[0]["gpu_energy_j"] > 0 and tracker.energy_description()[0] == "gpu: amdsmi-counter"


def _gpu_note(nvml) -> str | None:
    tracker = Tracker(os.getpid(), interval=0.05, gpu_index=0, nvml=nvml, rapl_root=None)
    tracker.start()
    deadline = time.monotonic() + 10
    while not tracker.samples and time.monotonic() < deadline:
        time.sleep(0.02)
    tracker.stop()
    return tracker.energy_description()[1]


def test_a_gpu_trial_without_nvidia_ml_py_names_the_extra(monkeypatch):
    """`pip install 'rigbench[torch]'` alone on an NVIDIA machine: GPU %, memory and energy were
    blank with no word why; the trial's energy note now names the extra that reads them."""
    from rigbench.hw import nvml as hw_nvml

    monkeypatch.setitem(sys.modules, "pynvml", None)  # `import pynvml` fails, as when not installed
    monkeypatch.setattr(hw_nvml, "_real_nvml", hw_nvml._UNSET)
    assert _gpu_note(None) == ("gpu: no readings: nvidia-ml-py is not installed for NVML "
                               "(pip install 'rigbench[nvidia]'), and amdsmi did not answer")
    # installed, but NVML does not start (no driver): no install hint
    assert _gpu_note(FakeNVML(os.getpid(), init_fails=True)) == "gpu: no readings: neither NVML nor amdsmi answered for this GPU"


def test_rapl_power_mean_and_peak_from_the_counter():
    # 10 W for 1 s, then 30 W for 1 s, sampled every 0.5 s from t=9: mean over [10, 12] is 20 W.
    samples, energy = [], 0.0
    for i in range(9):
        t = 9.0 + 0.5 * i
        samples.append({"t": t, "cpu_energy_j": energy, "dram_energy_j": energy / 10})
        energy += 0.5 * (10.0 if t < 11.0 else 30.0)
    window = summarize(samples, 10.0, 12.0, interval_slack=0)
    assert window["cpu_energy_j"] == pytest.approx(40.0)
    assert window["cpu_power_w_mean"] == pytest.approx(20.0) and window["cpu_power_w_peak"] == pytest.approx(30.0)
    assert window["dram_power_w_mean"] == pytest.approx(2.0) and window["dram_power_w_peak"] == pytest.approx(3.0)
    assert window["gpu_energy_j"] is None
