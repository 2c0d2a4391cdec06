"""`rigbench compare`, `results export --format bundle` / `results import` and `score`
through real subprocesses, on two real (short) runs of mlp at its reference batch."""

import json
import sqlite3
import subprocess
import sys

import pytest

from rigbench.store import Store

pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(300)


def rigbench(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "rigbench", *args], capture_output=True, text=True, timeout=240)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\nstdout:{proc.stdout}\nstderr:{proc.stderr}")
    return proc


def trial_count(path):
    with sqlite3.connect(path) as conn:
        return conn.execute("select count(*) from trials").fetchone()[0]


def test_compare_export_import_score(tmp_path):
    db = str(tmp_path / "here.db")
    run_ids = []
    # mlp at 64 is the reference batch of the score's suite and Shi's FCN-S. No --threads: the
    # suite is the default configuration (conftest's OMP_NUM_THREADS keeps the load at a core).
    # -d cpu: on a machine with a GPU the default would also run it (a second pair, a second score).
    for _ in range(2):
        rows = json.loads(rigbench("run", "mlp", "-d", "cpu", "--quick", "--steps", "8",
                                   "--db", db, "--json").stdout)
        assert rows[0]["status"] == "ok", rows[0]["error"]
        run_ids.append(rows[0]["run_id"])

    compared = json.loads(rigbench("compare", *run_ids, "--db", db, "--json").stdout)
    (pair,) = compared["pairs"]
    assert compared["same_machine"] is True
    assert pair["trial"] == "mlp torch cpu b64 fp32"
    assert pair["verdict"] in ("faster", "slower", "no change")
    assert 0 < pair["p_value"] <= 1 and pair["ratio_ci"][0] <= pair["ratio"] <= pair["ratio_ci"][1]
    table = rigbench("compare", *run_ids, "--db", db).stdout
    assert "B/A [95% CI]" in table and "Mann-Whitney U" in table

    published = rigbench("compare", "--published", "--db", db)
    assert "FCN-S · Torch · GTX 1080 · b64" in published.stdout
    assert "run `rigbench run cnn -b 4,8,16,32,64,128,256,512,1024`" in published.stdout
    assert "no stored result" not in published.stderr.lower()

    bundle = tmp_path / "bundle.json"
    rigbench("results", "export", "--format", "bundle", "-o", str(bundle), "--db", db)
    fresh = str(tmp_path / "fresh.db")
    assert "Imported 2 results in 2 new runs" in rigbench("results", "import", str(bundle), "--db", fresh).stdout
    for trial_id in (1, 2):  # every field, raw step times and tracker samples included
        original, copy = Store(db).get(trial_id), Store(fresh).get(trial_id)
        assert copy == original and len(copy.step_times_s) >= 8 and copy.tracker_samples

    scored = json.loads(rigbench("score", run_ids[1], "--reference", str(bundle), "--db", db, "--json").stdout)
    (cpu,) = scored["scores"]
    assert cpu["device_class"] == "cpu" and [w["workload"] for w in cpu["workloads"]] == ["mlp"]
    assert cpu["ci"][0] <= cpu["score"] <= cpu["ci"][1]
    assert "cnn" in cpu["missing_here"] and cpu["workloads"][0]["quick"] is True
    # no --reference: the shipped machine of the class; the --quick timing is said
    shown = rigbench("score", run_ids[1], "--db", db).stdout
    assert "over reference machine dev-vm-epyc-2core (cpu)" in shown
    assert "mlp *" in shown and "* timed with the short --quick protocol" in shown

    data = json.loads(bundle.read_text())
    data["results"][1]["status"] = "exploded"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    before = trial_count(fresh)
    refused = rigbench("results", "import", str(bad), "--db", fresh, check=False)
    assert refused.returncode == 2
    assert "results[1].status: Input should be 'ok'" in refused.stderr
    assert trial_count(fresh) == before
