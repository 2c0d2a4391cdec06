"""The adapter contract for the Keras-family frameworks (tensorflow, keras-jax, keras-torch):
the checks of test_adapter.py and test_workloads.py, run in one child process per framework
(tests/contract/keras_child.py: Keras' backend is fixed at its first import) and asserted here
per workload from its JSON report. The same report carries the Keras parity checks against
torch (tests/keras_parity.py): gpt and vit (tests/unit/test_transformer_parity.py's Keras
check) asserted here, under all three; the networks in keras_networks.py, under tensorflow and
keras-torch.

Each framework has a test module of its own (test_keras_tensorflow.py, test_keras_jax.py,
test_keras_torch.py) that names it as FRAMEWORK and imports these checks: the suite runs a file
on one worker (`--dist loadfile`), and one file for all three made a 4-minute straggler."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rigbench.frameworks import load_adapter
from rigbench.frameworks.base import DeviceInfo
from rigbench.spec import TrialSpec
from rigbench.workloads import WORKLOADS, resolved_options
from rigbench.workloads.flops import train_flops_per_sample, trainable_params
from tests.conftest import WORKER_THREADS
from tests.contract.conftest import FLOP_DIFFERENCES, KERAS_FAMILY, NOISY_LOSS
from tests.contract.keras_child import DIGITS_EPOCHS
from tests.contract.test_workloads import SMALL_OPTIONS
from tests.keras_parity import TRANSFORMER_IDS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def report(request) -> dict:
    framework = request.module.FRAMEWORK
    if framework not in KERAS_FAMILY:
        pytest.skip(f"{framework} is not installed (its extra)")
    adapter = load_adapter(framework)
    # the worker's share of the cores (1 of 2 with two workers): at 2, two workers' children spun
    # against each other and keras-torch's digits training took 100 s instead of 28 s
    spec = TrialSpec(workload="mlp", batch_size=2, threads=WORKER_THREADS, framework=framework)
    env = {**os.environ, **adapter.environment(spec)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "tests.contract.keras_child", framework, str(WORKER_THREADS)],
                          capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=1200)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    return {"framework": framework, "threads": WORKER_THREADS, **json.loads(lines[-1].removeprefix("RESULT "))}


def test_software_and_devices(report):
    info = report["software"]
    assert isinstance(info[report["framework"]], str) and info[report["framework"]]
    assert info["num_threads"] == report["threads"] and "keras" in info  # the child called prepare(threads) first
    devices = report["devices"]
    assert devices[0]["id"] == "cpu" and devices[0]["kind"] == "cpu"
    for device in devices:
        assert set(device) == set(DeviceInfo.__annotations__)
        assert device["framework"] == report["framework"] and device["name"]


def test_is_oom_on_real_and_known_out_of_memory_errors(report):
    assert report["oom_recognised"] and all(report["oom_recognised"])
    assert report["not_oom_recognised"] == [False, False]  # the type matters, not only the text


def _workload(report: dict, name: str) -> dict:
    if name in report["skipped"]:
        pytest.skip(f"{name} is not stepped under {report['framework']} by default (keras_child.SUBSETS; "
                    f"RIGBENCH_CONTRACT_ALL=1 steps it)")
    found = report["workloads"][name]
    assert "error" not in found, found.get("error")
    return found


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_parameters_match_the_analytic_count(report, name):
    workload = WORKLOADS[name]
    found = _workload(report, name)
    assert found["params"] == trainable_params(workload, resolved_options(workload, SMALL_OPTIONS.get(name, {})))


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_steps_lower_the_loss(report, name):
    losses = _workload(report, name)["losses"]
    assert len(losses) >= 3 and all(math.isfinite(x) for x in losses), losses
    if len(WORKLOADS[name].parts) == 1 and name not in NOISY_LOSS:
        assert losses[-1] < losses[0], losses
    else:  # D loss + G loss need not fall (each update raises the other player's loss); it moves
        assert len(set(losses)) > 1, losses


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_timer_and_memory_hooks(report, name):
    found = _workload(report, name)
    assert len(found["elapsed_s"]) == len(found["losses"]) and all(t > 0 for t in found["elapsed_s"])
    assert found["peak_bytes"] is None  # on the CPU no framework keeps allocator statistics
    assert found["empty_losses"] == [] and found["device_name"]


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_adapter_flop_counter_matches_the_analytic_figure(report, name):
    options = SMALL_OPTIONS.get(name, {})
    flops = _workload(report, name)["flops"]
    difference = FLOP_DIFFERENCES.get((report["framework"], name), lambda options: 0.0)(options)
    assert flops == pytest.approx(train_flops_per_sample(WORKLOADS[name], options) + difference, rel=0.05)


def test_count_gives_parameters_and_flops(report):
    params, flops = report["count_mlp"]
    assert params == trainable_params(WORKLOADS["mlp"], resolved_options(WORKLOADS["mlp"], {}))
    assert flops == pytest.approx(train_flops_per_sample(WORKLOADS["mlp"], {}), rel=0.05)


def test_mlp_learns_digits_to_90_percent(report):
    """`train` on the real digits data set through the adapter's own loop (tensorflow: through
    the CLI, tests/e2e/test_train_tensorflow.py)."""
    if report["framework"] == "tensorflow":
        pytest.skip("tensorflow trains digits through the CLI in tests/e2e/test_train_tensorflow.py")
    accuracy = report["digits_accuracy"]
    assert len(accuracy) == DIGITS_EPOCHS and accuracy[-1] >= 0.9, accuracy


# --------------------------------------------------------------------------- parity with torch


def _parity(report: dict, key: str) -> dict:
    """The report's parity checks holding `key`, or a skip saying why there are none."""
    found = report["parity"]
    if found is None:
        pytest.skip("needs torch: the parity checks compare the Keras networks with torch's")
    assert key in found, f"{report['framework']}'s child compares no {key} (keras_parity.NETWORKS)"
    return found


@pytest.mark.parametrize("case", TRANSFORMER_IDS)
def test_transformers_on_torch_weights_agree(report, case):
    """test_transformer_parity's Keras check (gpt and vit: parameters, logits, the attention
    kernel), run by this framework's contract child so that a backend starts once for both."""
    from tests.unit.test_transformer_parity import check_keras_case

    check_keras_case(_parity(report, "transformers")["transformers"][case])
