"""The adapter contract (rigbench.frameworks.base), module-level part: every installed framework."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from rigbench.errors import UnsupportedError
from rigbench.frameworks import FRAMEWORKS as REGISTRY
from rigbench.frameworks import load_adapter
from rigbench.frameworks.base import DeviceInfo, missing_members
from rigbench.runner import child
from rigbench.spec import TrialSpec
from tests.contract.conftest import FRAMEWORKS, OOM_EXAMPLES


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_adapter_defines_the_contract(name):
    adapter = load_adapter(name)  # the adapter module only: it imports no framework
    assert missing_members(adapter) == []
    assert adapter.NAME == name and adapter.NAME in REGISTRY
    assert not hasattr(adapter, "installed")  # the registry answers that, without importing


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_environment_and_registry_need_no_framework_import(name):
    # environment() runs in the child before the framework starts, so computing it must not
    # import the framework.
    module, import_names, _ = REGISTRY[name]
    code = (f"import importlib, json, sys; from rigbench.spec import TrialSpec\n"
            f"a = importlib.import_module({module!r})\n"
            f"env = a.environment(TrialSpec(workload='mlp', batch_size=2, threads=3, framework={name!r}))\n"
            f"print(json.dumps([env, any(m in sys.modules for m in {import_names!r})]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    env, imported = json.loads(out)
    assert not imported
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_environment_sets_threads_only_when_asked(name):
    adapter = load_adapter(name)
    with_threads = adapter.environment(TrialSpec(workload="mlp", batch_size=2, threads=3, framework=adapter.NAME))
    assert "3" in with_threads.values()  # some thread-pool variable carries the count
    without = adapter.environment(TrialSpec(workload="mlp", batch_size=2, framework=adapter.NAME))
    assert "3" not in without.values()


def test_software_names_the_framework_version(adapter):
    info = adapter.software()
    assert isinstance(info[adapter.NAME], str) and info[adapter.NAME]
    assert "num_threads" in info
    json.dumps(info)  # stored with every result


def test_devices_start_with_the_cpu(adapter):
    devices = adapter.list_devices()
    assert devices[0]["id"] == "cpu" and devices[0]["kind"] == "cpu"
    for device in devices:
        assert set(device) == set(DeviceInfo.__annotations__)
        assert device["framework"] == adapter.NAME and device["name"]


def test_is_oom_on_real_and_known_out_of_memory_errors(adapter):
    for exc in OOM_EXAMPLES[adapter.NAME]():
        assert adapter.is_oom(exc), repr(exc)
    assert not adapter.is_oom(RuntimeError("mat1 and mat2 shapes cannot be multiplied (4x10 and 20x3)"))
    assert not adapter.is_oom(ValueError("out of memory"))  # the type matters, not only the text


def test_child_applies_the_environment_and_threads_before_counting(monkeypatch):
    # The child must set the adapter's environment, then size its thread pools (prepare, once),
    # before anything can start the framework: the first framework call it makes (count) must
    # already see both.
    seen = {}

    def prepare(threads):
        seen["prepared"] = (threads, child.os.environ.get("RIGBENCH_CONTRACT_PROBE"))

    def count(workload, options):
        seen["env"] = child.os.environ.get("RIGBENCH_CONTRACT_PROBE")
        assert "prepared" in seen
        return 1, 1.0

    def build(spec, workload):
        raise UnsupportedError("stop here")

    fake = SimpleNamespace(NAME="fake", environment=lambda spec: {"RIGBENCH_CONTRACT_PROBE": "set"},
                           software=lambda: {"fake": "1"}, count=count, build=build, prepare=prepare,
                           is_oom=lambda exc: False)
    monkeypatch.setattr(child, "load_adapter", lambda name: fake)
    monkeypatch.setenv("RIGBENCH_CONTRACT_PROBE", "not yet")  # restored after the test
    report = child.run_trial(TrialSpec(workload="cnn", batch_size=2, threads=3))
    assert report.status == "unsupported" and seen == {"env": "set", "prepared": (3, "set")}
    # flops_per_sample is the workload's analytic figure, not the adapter's count (1.0)
    assert report.flops_per_sample == pytest.approx(25_736_448)


def test_no_workload_name_in_adapters_outside_model_builders():
    # Adapters map declared workload facts through tables; only a models.py (the builders)
    # may name a workload. A string constant equal to a workload name anywhere else is a branch
    # (or a table) on the name.
    import ast
    from pathlib import Path

    import rigbench.frameworks
    from rigbench.workloads import WORKLOADS

    root = Path(rigbench.frameworks.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "models.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in WORKLOADS:
                found.append(f"{path.relative_to(root)}:{node.lineno}: {node.value!r}")
    assert found == []
