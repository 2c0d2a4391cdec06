"""A real `rigbench calibrate` travels in a results bundle: calibrated in database A (a child
measuring this CPU), exported and imported with the commands into database B, where
`rigbench roofline` gives the trial's MFU against the peak measured in A."""

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from rigbench import cli
from rigbench.spec import Metrics, Result, TrialSpec
from rigbench.store import Store
from rigbench.store.calibrations import latest_calibration

pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(240)


def rigbench(*args: str) -> str:
    done = CliRunner().invoke(cli.app, list(args))
    assert done.exit_code == 0, done.output
    return done.stdout


def test_a_real_calibration_travels_to_another_database(tmp_path):
    a, b, path = str(tmp_path / "a.db"), str(tmp_path / "b.db"), str(tmp_path / "bundle.json")
    proc = subprocess.run([sys.executable, "-m", "rigbench", "calibrate", "-d", "cpu", "--quick", "--precision",
                           "fp32", "--threads", "1", "--db", a, "--json"], capture_output=True, text=True, timeout=200)
    assert proc.returncode == 0, proc.stderr
    calibrated = json.loads(proc.stdout)
    [device] = calibrated["devices"]
    source = Store(a)
    peak = latest_calibration(source, device["device_name"])["matmul_flops"]["fp32"]
    # a trial on that device, stored as `rigbench run` stores one (its speed is not what is tested)
    source.add_run("run1", "2026-01-01T00:00:00+00:00", "rigbench run mlp", source.machine(calibrated["run_id"]))
    source.add_result(Result(run_id="run1", created_at="2026-01-01T00:00:00+00:00", status="ok",
                             spec=TrialSpec(workload="mlp", device="cpu", batch_size=32), device_name=device["device_name"],
                             metrics=Metrics(samples_per_s=100.0, flops_per_sample=1e6, steps_measured=3),
                             step_times_s=[0.32, 0.32, 0.32]))

    rigbench("results", "export", "--format", "bundle", "--db", a, "--output", path)
    said = rigbench("results", "import", path, "--db", b)
    n = len(device["measurements"])
    assert f"Imported 1 results in 2 new runs from {path}, and {n} calibration measurements" in said
    [row] = json.loads(rigbench("roofline", "--db", b, "--json"))
    assert row["device_name"] == device["device_name"]
    assert row["calibrated"]["peak_flops"] == peak
    assert row["calibrated"]["mfu"] == pytest.approx(100.0 * 1e6 / peak)
    said = rigbench("results", "import", path, "--db", b)  # again: nothing added, and it says so
    assert f"1 results already present were skipped, as were {n} calibration measurements already stored." in said
    with Store(b).engine.connect() as conn:
        stored = conn.exec_driver_sql("select count(*) from calibrations").scalar()
    assert stored == n
