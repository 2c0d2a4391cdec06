"""`--energy estimate` (issue 13): the TDP x utilisation rule on hand-computed numbers, that it
runs only on request, only for sources that were not measured, never mixed into energy_j, and
that the option is stored with a trial without changing its configuration.

Spec-sheet rows are the shipped ones (analysis/data/hardware.toml): AMD Ryzen 5 3600 (TDP 65 W,
12 threads) and NVIDIA H100 SXM5 80GB (TDP 700 W)."""

from __future__ import annotations

import json
import subprocess
import sys

import psutil
import pytest
from typer.testing import CliRunner

from rigbench.analysis.energy_estimate import cpu_estimate, estimate_energy, gpu_estimate
from rigbench.analysis.specs import lookup
from rigbench.child_report import ChildReport
from rigbench.cli import app
from rigbench.experiments import devices as experiment_devices
from rigbench.experiments.plan import plan_run, plan_train
from rigbench.experiments.scaling import plan_scaling
from rigbench.experiments.sweep import plan_sweep
from rigbench.runner import assemble
from rigbench.runner.assemble import build_result
from rigbench.runner.launchers import Outcome
from rigbench.spec import MeasureOptions, TrialSpec
from rigbench.sweep_spec import SweepSpec

RYZEN = "AMD Ryzen 5 3600 6-Core Processor"  # as /proc/cpuinfo names it
H100 = "NVIDIA H100 80GB HBM3"  # as torch names it
ESTIMATE = MeasureOptions(energy="estimate")


@pytest.fixture(autouse=True)
def _twelve_logical_cpus(monkeypatch):
    """The tracker's 100% is every logical CPU of the machine: make it a 12-thread Ryzen's."""
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: 12)
    monkeypatch.setattr(assemble, "cpu_identity", lambda: {"model": RYZEN, "flags": []})
    monkeypatch.setattr(experiment_devices, "framework_devices", lambda framework: ["cpu"])


# ------------------------------------------------------------------ the rule


def test_cpu_rule_is_tdp_times_busy_share_of_the_package_times_window():
    est = cpu_estimate(RYZEN, util_pct=50.0, logical_cpus=12, window_s=4.0)
    assert est.joules == pytest.approx(65 * 6 / 12 * 4.0)  # 130 J
    assert est.basis == "TDP 65 W (spec sheet: AMD Ryzen 5 3600) x 6.0 of 12 threads busy x 4.0 s"
    # A VM that sees 2 of the package's 12 threads, both busy, is charged 2/12 of the TDP, not all of it.
    vm = cpu_estimate(RYZEN, util_pct=100.0, logical_cpus=2, window_s=4.0)
    assert vm.joules == pytest.approx(65 * 2 / 12 * 4.0)


def test_gpu_rule_is_tdp_times_utilisation_times_window():
    est = gpu_estimate(H100, util_pct=40.0, window_s=2.0)
    assert est.joules == pytest.approx(700 * 0.4 * 2.0)  # 560 J
    assert est.basis == "TDP 700 W (spec sheet: NVIDIA H100 SXM5 80GB) x 40% busy x 2.0 s"


def test_no_tdp_or_no_utilisation_gives_no_estimate_and_says_why():
    assert cpu_estimate("Mystery CPU 9000", 50.0, 12, 2.0).joules is None
    assert cpu_estimate("Mystery CPU 9000", 50.0, 12, 2.0).basis == "no TDP known for Mystery CPU 9000"
    assert gpu_estimate(None, 40.0, 2.0).basis == "no TDP known for this GPU"
    assert cpu_estimate(RYZEN, None, 12, 2.0).joules is None
    assert gpu_estimate(H100, None, 2.0).basis.startswith("no utilisation figure for NVIDIA H100 SXM5 80GB")


def test_measured_sources_are_not_estimated():
    both = estimate_energy(2.0, cpu_measured=True, cpu_name=RYZEN, cpu_util_pct=50.0, logical_cpus=12,
                           gpu=True, gpu_measured=True, gpu_name=H100, gpu_util_pct=40.0)
    assert both.sources == () and both.joules is None and both.basis is None
    cpu_only = estimate_energy(2.0, cpu_measured=False, cpu_name=RYZEN, cpu_util_pct=50.0, logical_cpus=12,
                               gpu=True, gpu_measured=True, gpu_name=H100, gpu_util_pct=40.0)
    assert [s.source for s in cpu_only.sources] == ["cpu"] and cpu_only.joules == pytest.approx(130 / 2)


# ------------------------------------------------------------------ in a trial's result


def _samples(gpu_energy_w=None, cpu_energy_w=None, gpu_util=None, t0=9.0, t1=13.0):
    """Tracker samples at 10 Hz: the trial's process tree at 50% of the machine (6 of 12
    threads), optionally GPU utilisation and cumulative energy counters."""
    out, t = [], t0
    while t <= t1 + 1e-9:
        s = {"t": t, "proc_cpu_pct": 50.0, "sys_cpu_pct": 55.0, "rss_bytes": 1e8}
        if gpu_util is not None:
            s["gpu_util_pct"] = gpu_util
        if gpu_energy_w is not None:
            s["gpu_energy_j"] = gpu_energy_w * (t - t0)
        if cpu_energy_w is not None:
            s["cpu_energy_j"] = cpu_energy_w * (t - t0)
        out.append(s)
        t += 0.1
    return out


def _result(spec, samples, device_name, method=None, note=None):
    report = ChildReport(status="ok", measure_start=10.0, measure_end=12.0, step_times_s=[0.1] * 20,
                         losses=[1.0] * 20, params=10, device_name=device_name)
    outcome = Outcome(reports=[report], samples=samples, returncode=0, energy_method=method, energy_note=note)
    return build_result(spec, outcome, "run")


def test_cpu_trial_gets_a_labelled_estimate_apart_from_energy_j():
    spec = TrialSpec(workload="mlp", batch_size=8, measure=ESTIMATE)
    result = _result(spec, _samples(), RYZEN, note="cpu: no powercap interface")
    m = result.metrics
    assert m.cpu_util_pct_mean == pytest.approx(50.0)
    assert m.energy_estimate_j == pytest.approx(65 * 6 / 12 * 2.0)  # the 2 s window: 65 J
    assert m.energy_estimate_per_sample_j == pytest.approx(65.0 / (20 * 8))
    assert m.energy_estimate_basis == "cpu: TDP 65 W (spec sheet: AMD Ryzen 5 3600) x 6.0 of 12 threads busy x 2.0 s"
    assert m.energy_j is None and m.energy_per_sample_j is None  # never mixed with the measured figures
    assert m.energy_note == "cpu: no powercap interface"
    row = result.row()
    assert row["energy_estimate_j"] == pytest.approx(65.0) and row["energy_j"] is None


def test_without_the_option_nothing_is_estimated():
    m = _result(TrialSpec(workload="mlp", batch_size=8), _samples(), RYZEN).metrics
    assert m.energy_estimate_j is None and m.energy_estimate_per_sample_j is None
    assert m.energy_estimate_basis is None


def test_without_a_tdp_no_estimate_and_the_basis_says_so():
    spec = TrialSpec(workload="mlp", batch_size=8, measure=ESTIMATE)
    m = _result(spec, _samples(), "Mystery CPU 9000").metrics
    assert m.energy_estimate_j is None and m.energy_estimate_per_sample_j is None
    assert m.energy_estimate_basis == "cpu: no TDP known for Mystery CPU 9000"


def test_a_measured_gpu_counter_leaves_only_the_cpu_to_estimate():
    spec = TrialSpec(workload="mlp", device="cuda:0", batch_size=8, measure=ESTIMATE)
    m = _result(spec, _samples(gpu_energy_w=100.0, gpu_util=40.0), H100, method="gpu: nvml-counter").metrics
    assert m.energy_j == pytest.approx(200.0)  # measured GPU only
    assert m.energy_estimate_j == pytest.approx(65.0)  # the CPU (named by the OS), not the GPU
    assert m.energy_estimate_basis is not None
    assert m.energy_estimate_basis.startswith("cpu: TDP 65 W (spec sheet: AMD Ryzen 5 3600)")
    assert "gpu" not in m.energy_estimate_basis


def test_a_gpu_without_counter_or_power_is_estimated_from_its_utilisation():
    spec = TrialSpec(workload="mlp", device="cuda:0", batch_size=8, measure=ESTIMATE)
    m = _result(spec, _samples(gpu_util=40.0), H100).metrics
    assert m.energy_j is None
    assert m.energy_estimate_j == pytest.approx(700 * 0.4 * 2.0 + 65.0)
    assert m.energy_estimate_basis == (
        "gpu: TDP 700 W (spec sheet: NVIDIA H100 SXM5 80GB) x 40% busy x 2.0 s; "
        "cpu: TDP 65 W (spec sheet: AMD Ryzen 5 3600) x 6.0 of 12 threads busy x 2.0 s")


def test_every_source_measured_means_no_estimate():
    spec = TrialSpec(workload="mlp", device="cuda:0", batch_size=8, measure=ESTIMATE)
    m = _result(spec, _samples(gpu_energy_w=100.0, cpu_energy_w=20.0, gpu_util=40.0), H100,
                method="cpu: rapl-package; gpu: nvml-counter").metrics
    assert m.energy_j == pytest.approx(240.0)
    assert m.energy_estimate_j is None and m.energy_estimate_basis is None


# ------------------------------------------------------------------ the option


def test_the_option_is_stored_but_not_part_of_the_configuration():
    plain = TrialSpec(workload="mlp", batch_size=8)
    asked = TrialSpec(workload="mlp", batch_size=8, measure=ESTIMATE)
    assert asked.config_key() == plain.config_key()
    assert asked.canonical_json() != plain.canonical_json()  # a sweep point of its own
    assert TrialSpec.model_validate_json(asked.model_dump_json()).measure.energy == "estimate"
    assert plain.measure.energy == "measure"


def test_planners_pass_the_option_through():
    assert [s.measure.energy for s in plan_run(["mlp"], ["cpu"], quick=True, energy="estimate")] == ["estimate"]
    assert plan_run(["mlp"], ["cpu"], quick=True)[0].measure.energy == "measure"
    assert plan_train("mlp", "digits", 1, energy="estimate")[0].measure.energy == "estimate"
    assert plan_sweep(SweepSpec(workloads=["mlp"], quick=True, energy="estimate"))[0].measure.energy == "estimate"
    assert {s.measure.energy for s in plan_scaling("mlp", quick=True, energy="estimate")} == {"estimate"}


def test_cli_rejects_an_unknown_energy_mode_with_exit_2():
    res = CliRunner().invoke(app, ["run", "mlp", "-d", "cpu", "--quick", "--energy", "guess"])
    assert res.exit_code == 2
    assert "--energy" in res.output and "guess" in res.output


@pytest.mark.slow
def test_cli_run_with_estimate_on_this_machine(tmp_path):
    """A real trial: a CPU estimate if this machine's CPU has a TDP in the sheets, else the reason."""
    proc = subprocess.run(
        [sys.executable, "-m", "rigbench", "run", "mlp", "-d", "cpu", "--quick", "--energy", "estimate",
         "--json", "--db", str(tmp_path / "e.db")], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)
    assert row["status"] == "ok"
    sheet = lookup(row["device_name"], kind="cpu")
    if row["cpu_energy_j"] is not None:  # RAPL was readable: measured, nothing to estimate
        assert row["energy_estimate_j"] is None
    elif sheet is None or sheet.tdp_w is None:
        assert row["energy_estimate_j"] is None
        assert row["energy_estimate_basis"] == f"cpu: no TDP known for {row['device_name']}"
    else:
        assert row["energy_estimate_j"] > 0
        assert row["energy_estimate_basis"].startswith(f"cpu: TDP {sheet.tdp_w:g} W (spec sheet: {sheet.name})")
