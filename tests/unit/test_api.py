"""API pieces that need no framework: speed-ups, and the core without torch installed."""

import json
import subprocess
import sys
import textwrap

import pytest
from rich.console import Console

from rigbench.api import speedups_over_cpu
from rigbench.reports import terminal
from rigbench.spec import Metrics, Result, TrialSpec


def result(device, speed, status="ok", batch=32, precision="fp32", **changes):
    spec = TrialSpec(workload="cnn", device=device, batch_size=batch, precision=precision, **changes)
    return Result(run_id="r", created_at="t", spec=spec, status=status,
                  metrics=Metrics(samples_per_s=speed))


def test_speedups_pair_same_workload_batch_precision_only():
    rows = speedups_over_cpu([
        result("cpu", 100.0), result("cuda:0", 1500.0),
        result("cuda:0", 9999.0, batch=64),            # no CPU result at batch 64
        result("mps", 50.0, status="oom"),             # failed: no speed-up
        result("cpu", 10.0, precision="bf16"), result("cuda:0", 40.0, precision="bf16"),
    ])
    assert [(r["device"], r["precision"], r["speedup"]) for r in rows] == [
        ("cuda:0", "fp32", pytest.approx(15.0)), ("cuda:0", "bf16", pytest.approx(4.0))]


def test_speedups_pair_only_one_configuration():
    """Threads, torch.compile and channels-last are part of the configuration: a GPU trial
    pairs with the CPU trial that differs from it in the device alone."""
    rows = speedups_over_cpu([
        result("cpu", 100.0), result("cpu", 400.0, threads=4), result("cpu", 200.0, compile=True),
        result("cuda:0", 1000.0), result("cuda:0", 1200.0, threads=4),
        result("cuda:0", 3000.0, compile=True), result("cuda:0", 5000.0, channels_last=True),
    ])
    assert [(r["speedup"]) for r in rows] == [pytest.approx(10.0), pytest.approx(3.0), pytest.approx(15.0)]


def test_speedups_over_repeats_are_the_ratio_of_the_means_of_the_newest_run():
    """`run --repeat`: one row per configuration, the (geometric) mean of its trials over the CPU's,
    never one repeat against another; an older run's trials are superseded."""
    def trial(device, speed, run, rid):
        r = result(device, speed)
        return r.model_copy(update={"run_id": run, "id": rid})

    rows = speedups_over_cpu([
        trial("cuda:0", 9000.0, "old", 1), trial("cpu", 10.0, "old", 2),
        trial("cpu", 80.0, "new", 3), trial("cuda:0", 1125.0, "new", 4),  # sqrt(80 x 125) = 100
        trial("cpu", 125.0, "new", 5), trial("cuda:0", 2000.0, "new", 6),  # sqrt(1125 x 2000) = 1500
    ])
    assert len(rows) == 1
    assert rows[0]["speedup"] == pytest.approx(1500 / 100)
    assert (rows[0]["trials"], rows[0]["base_trials"], rows[0]["trial"]) == ([4, 6], [3, 5], 6)
    console = Console(width=120, record=True)
    console.print(terminal.speedup_table([*rows, {**rows[0], "trials": [7], "base_trials": [8]}]))
    text = console.export_text()
    assert "15.00x (mean of 2 / 2)" in text and text.count("mean of") == 1  # a single pair says nothing


#: What `from rigbench import api` offered as one module (api.py) before it became a package.
PUBLIC_NAMES = """
    plan_run run RunOutcome plan_train prepare_data workloads_info devices_info framework_devices
    speedups_over_cpu WHERE_KEYS parse_where select_results report ReportOutcome plan_lr_find
    plan_scaling default_thread_counts default_precisions calibrate CalibrateOutcome
    device_calibrations spec_sheet result_roofline roofline this_machine_results compare_published
    compare CompareOutcome export_bundle import_bundle score ScoreOutcome sweep plan_sweep
    SweepOutcome find_max_batch MaxBatchOutcome recommend RecommendOutcome UsageError
""".split()


def test_the_api_package_keeps_every_public_name():
    from rigbench import api

    assert sorted(n for n in PUBLIC_NAMES if not hasattr(api, n)) == []
    assert set(PUBLIC_NAMES) <= set(api.__all__)
    # a submodule named like a function would shadow it on the package
    assert all(callable(getattr(api, n)) for n in ("compare", "score", "roofline", "sweep", "report"))


BLOCK_TORCH = """
import importlib.abc, sys
class BlockTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("torch", "jax", "tensorflow", "keras"):  # every framework: the core needs none
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, BlockTorch())
"""


def test_core_imports_and_works_without_torch(tmp_path):
    code = BLOCK_TORCH + textwrap.dedent(f"""
        import rigbench, rigbench.cli, rigbench.api as api
        from rigbench.errors import UsageError
        from rigbench.frameworks import installed_frameworks
        from rigbench.store import Store
        assert installed_frameworks() == [], installed_frameworks()
        from rigbench.workloads import WORKLOADS
        rows = api.workloads_info()
        assert [r["name"] for r in rows] == list(WORKLOADS) and all(r["params"] > 0 for r in rows)
        assert [d["id"] for d in api.devices_info()][0] == "cpu"
        Store({str(tmp_path / 'x.db')!r}).list()
        try:
            api.plan_run(["mlp"])
        except UsageError as exc:
            print("ERROR:", exc)
        assert not set(sys.modules) & {{"torch", "jax", "tensorflow", "keras"}}
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "ERROR: framework 'torch' is not installed: pip install" in proc.stdout


def test_devices_info_reports_each_framework_as_it_answers(monkeypatch):
    # `rigbench devices` was silent for the 13-28 s its framework probes take: the CLI's
    # progress bar is fed by these callbacks, one per answer.
    from rigbench.experiments import devices

    answers = {"torch": [{"id": "cpu", "kind": "cpu", "name": "x"}], "jax": [{"id": "cpu", "kind": "cpu"}],
               "keras-torch": [{"id": "cpu", "kind": "cpu"}]}
    children: list[tuple[str, ...]] = []
    monkeypatch.setattr(devices, "installed_frameworks", lambda: list(answers))
    monkeypatch.setattr(devices, "probe_group", lambda group: children.append(tuple(group)))
    monkeypatch.setattr(devices, "probe", lambda name: {"devices": answers[name]})
    asked: list[list[str]] = []
    answered: list[str] = []
    rows = devices.devices_info(on_probing=asked.append, on_probed=answered.append)
    assert asked == [["torch", "jax", "keras-torch"]] and sorted(answered) == ["jax", "keras-torch", "torch"]
    assert sorted(children) == [("jax",), ("torch", "keras-torch")]  # keras-torch asked in torch's child
    assert [r for r in rows if r["id"] == "cpu"][0]["frameworks"] == ["torch", "jax", "keras-torch"]


def test_devices_into_a_pipe_says_what_it_waits_for(monkeypatch):
    # no progress bar off a terminal: `rigbench devices | cat` was silent for the 12 s of its probes
    from typer.testing import CliRunner

    from rigbench.cli import app
    from rigbench.experiments import devices

    monkeypatch.setattr(devices, "installed_frameworks", lambda: ["torch", "jax"])
    monkeypatch.setattr(devices, "probe_group", lambda group: None)
    monkeypatch.setattr(devices, "probe", lambda name: {"devices": [{"id": "cpu", "kind": "cpu", "name": "x"}]})
    done = CliRunner().invoke(app, ["devices", "--json"])
    assert done.exit_code == 0, done.output
    # ... and as each answers: after its first line, `rigbench devices 2>log` was silent for 19 s here
    first, second = "torch", "jax"
    lines = done.stderr.splitlines()
    if "jax answered;" in done.stderr:  # the children answer in either order
        first, second = second, first
    assert lines == ["asking torch, jax for devices (a child process each, seconds each)",
                     f"  {first} answered; waiting for {second}", f"  {second} answered"]
    assert json.loads(done.stdout)[0]["id"] == "cpu"


def test_the_fields_two_filtered_sides_are_split_by():
    from rigbench.api.comparison import split_fields

    assert split_fields(["device=cpu"], ["device=cuda:0"]) == {"device"}
    assert split_fields(["framework=torch", "workload=mlp"], ["framework=jax", "workload=mlp"]) == {"framework"}
    # two values on a side would meet each other under one key: no split there
    assert split_fields(["framework=torch", "framework=jax"], ["framework=tensorflow"]) == set()
    assert split_fields(["status=ok"], ["status=oom"]) == set()  # not a configuration field
    assert split_fields(["device=cpu"], []) == set()
