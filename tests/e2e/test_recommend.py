"""`rigbench recommend` on this CPU, from an empty database: internally consistent with what it stored."""

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from rigbench import cli
from rigbench.analysis.recommend import timed
from rigbench.analysis.scaling import changed_knobs
from rigbench.store import Store
from tests.e2e.test_bad_input import assert_one_line_error

pytest.importorskip("torch")
pytest.importorskip("sklearn")
pytestmark = pytest.mark.timeout(600)


def rigbench(*args):
    return subprocess.run([sys.executable, "-m", "rigbench", *args], capture_output=True, text=True, timeout=580)


def test_recommendation_is_consistent_with_the_stored_measurements(tmp_path):
    db = str(tmp_path / "rec.db")
    proc = rigbench("recommend", "mlp", "--quick", "--batch-size", "8,16", "--device", "cpu", "--db", db, "--json")
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout)
    lines = {line["decision"]: line for line in outcome["lines"]}
    assert list(lines) == ["device", "batch_size", "learning_rate", "precision", "energy", "threads",
                           "loader_workers", "bound_by", "epoch_seconds"]
    assert all(line["value"] is not None for name, line in lines.items() if name != "energy"), outcome
    assert outcome["ran"] and not outcome["missing"]
    assert "running max-batch on cpu" in proc.stderr  # it says what it runs and why
    assert "recommend: up to " in proc.stderr and " min" in proc.stderr  # and, first, how long at least

    stored = Store(db).list(workload="mlp")
    speed = [r for r in stored if timed(r) and r.spec.device == "cpu"]
    batch = lines["batch_size"]["value"]
    # The recommended batch was measured (fp32, default threads) ...
    assert any(r.spec.batch_size == batch and not changed_knobs(r) for r in speed)
    # ... and fits: max-batch ran a probe at least that large, and recommends at least it.
    mb = lines["batch_size"]["numbers"]["max_batch"]
    assert batch <= mb["recommended"] <= mb["largest_ok"]
    probes = [r for r in stored if r.run_id == mb["run_id"]]
    assert any(r.spec.batch_size == mb["largest_ok"] and r.status == "ok" for r in probes)
    assert {r.spec.kind for r in probes} == {"probe"}  # a kind of their own, never a speed figure

    # The recommended threads: a count other than the default only where it was resolved faster;
    # each count's figure is the mean of the stored trials it names.
    at_batch = [r for r in speed if r.spec.batch_size == batch and changed_knobs(r) in ([], ["threads"])]
    assert {r.threads for r in at_batch} >= {1, 2}
    counts = {int(n): figures for n, figures in lines["threads"]["numbers"].items()}
    by_id = {r.id: r.metrics.samples_per_s for r in at_batch}
    for figures in counts.values():
        assert figures["samples_per_s"] == pytest.approx(sum(by_id[i] for i in figures["trials"]) / len(figures["trials"]))
    default = next(r.threads for r in at_batch if not changed_knobs(r))
    chosen = lines["threads"]["value"]
    if chosen != default:
        assert counts[chosen]["within_noise"] is False
        assert counts[chosen]["samples_per_s"] > counts[default]["samples_per_s"]
    else:
        assert "the framework's default" in lines["threads"]["text"]

    # The learning rate is lr-find's suggestion, scaled linearly from its batch to the recommended one.
    found = [r for r in stored if r.spec.lr_find is not None]
    assert len(found) == 1 and found[0].metrics.suggested_lr
    assert lines["learning_rate"]["value"] == pytest.approx(
        found[0].metrics.suggested_lr * batch / found[0].spec.batch_size)
    assert lines["precision"]["value"] in ("fp32", "bf16")
    # Energy is decided only from measured energy; without any (no RAPL, no GPU) the line says why.
    measured = [r for r in speed if r.metrics.energy_per_sample_j is not None]
    assert (lines["energy"]["value"] is None) == (not measured)
    if not measured:
        assert lines["energy"]["text"].startswith("energy: not measured here (")
    assert lines["epoch_seconds"]["numbers"]["dataset_size"] == 60_000  # MNIST, mlp's reference data set

    # Everything is stored now: --no-run decides the same from the database alone, and the
    # printed lines are the JSON's lines.
    # (In this process: the CLI's start-up would only add time.)
    args = ["recommend", "mlp", "--quick", "--batch-size", "8,16", "--no-run", "--db", db]
    again, printed = CliRunner().invoke(cli.app, [*args, "--json"]), CliRunner().invoke(cli.app, args)
    assert again.exit_code == 0 and printed.exit_code == 0, again.output + printed.output
    repeat = json.loads(again.output)
    assert repeat["lines"] == outcome["lines"] and repeat["ran"] == [] and repeat["missing"] == []
    for line in repeat["lines"]:
        assert f"  - {line['text']}" in printed.output

    # A stored speed trial timed on a busy machine does not count as measured: recommend (not
    # --no-run) measures that configuration again, and only it. The trials are marked here by
    # hand (every other one quiet), since this suite's own load decides how busy each really was.
    variant = next(r for r in at_batch if changed_knobs(r) == ["threads"])  # the count other than the default
    again_id = variant.id
    _mark_others_share(db, {r.id: 50.0 if r.id == again_id else 0.0 for r in speed})
    proc = rigbench("recommend", "mlp", "--quick", "--batch-size", "8,16", "--device", "cpu", "--db", db, "--json")
    assert proc.returncode == 0, proc.stderr
    assert f"leaving out 1 stored trial(s) timed on a busy machine (#{again_id})" in proc.stderr
    rerun = json.loads(proc.stdout)["run_id"]
    fresh = [r for r in Store(db).list(workload="mlp") if r.run_id == rerun]
    assert [(r.spec.kind, r.spec.batch_size, r.spec.threads) for r in fresh] == [("speed", batch, variant.spec.threads)]
    # a busy baseline outside the asked batch sizes is measured again too, not dropped unmeasured
    other = 8 if batch == 16 else 16
    [base] = [r for r in speed if r.spec.batch_size == other and not changed_knobs(r)]
    _mark_others_share(db, {base.id: 50.0})
    proc = rigbench("recommend", "mlp", "--quick", "--batch-size", str(batch), "--device", "cpu", "--db", db, "--json")
    assert proc.returncode == 0, proc.stderr
    rerun = json.loads(proc.stdout)["run_id"]
    fresh = [r for r in Store(db).list(workload="mlp") if r.run_id == rerun]
    assert ("speed", other, None) in [(r.spec.kind, r.spec.batch_size, r.spec.threads) for r in fresh]


def _mark_others_share(db: str, shares: dict[int, float]) -> None:
    """Set stored trials' others_cpu_pct_mean (trial id -> %), as if the tracker had read it."""
    import sqlite3

    with sqlite3.connect(db) as conn:
        for trial_id, share in shares.items():
            [text] = conn.execute("SELECT result_json FROM trials WHERE id = ?", (trial_id,)).fetchone()
            result = json.loads(text)
            result["metrics"]["others_cpu_pct_mean"] = share
            conn.execute("UPDATE trials SET result_json = ? WHERE id = ?", (json.dumps(result), trial_id))


@pytest.mark.parametrize("args,message", [
    (["lr-find", "mlp", "--dataset", "nosuch"], "unknown data set 'nosuch'"),
    (["lr-find", "mlp", "--dataset", "digits", "--start-lr", "1", "--end-lr", "0.1"], "--start-lr must be"),
    (["scaling", "cnn", "--precision", "fp32"], "fp32 is the baseline"),
])
def test_bad_input_is_one_line_exit_2(args, message):
    # In process, as tests/e2e/test_bad_input.py: refused before any trial (a process of its own
    # only added its start-up); tests/e2e/test_cli.py checks a real process's exit 2 and one line.
    assert_one_line_error(CliRunner().invoke(cli.app, args), message)
