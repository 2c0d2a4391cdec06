"""Which devices a request means (experiments/devices.chosen_devices): the CPU alone is taken
without starting the framework in a child process; any other device is checked against what
the framework lists. The framework's listing is replaced here by one that says which call
asked for it."""

import pytest

from rigbench.errors import UsageError
from rigbench.experiments import devices
from rigbench.experiments.plan import plan_run


@pytest.fixture
def asked(monkeypatch):
    """The frameworks whose devices were listed; each lists a CPU and one GPU."""
    seen: list[str] = []

    def listing(framework: str) -> list[str]:
        seen.append(framework)
        return ["cpu", "cuda:0"]

    monkeypatch.setattr(devices, "framework_devices", listing)
    return seen


def test_the_cpu_alone_needs_no_framework_to_say_so(asked):
    assert devices.chosen_devices("torch", ["CPU"], default=None) == ["cpu"]
    assert devices.chosen_devices("jax", [], default=["cpu"]) == ["cpu"]
    assert asked == []


def test_other_devices_are_checked_against_the_frameworks_list(asked):
    assert devices.chosen_devices("torch", ["cuda"], default=None) == ["cuda:0"]
    assert devices.chosen_devices("torch", ["cpu", "cuda:0"], default=None) == ["cpu", "cuda:0"]
    assert devices.chosen_devices("torch", [], default=None) == ["cpu", "cuda:0"]  # every one it has
    with pytest.raises(UsageError, match="device 'cuda:3' is not available to tensorflow here: choose from cpu, cuda:0"):
        devices.chosen_devices("tensorflow", ["cuda:3"], default=None)
    assert asked == ["torch", "torch", "torch", "tensorflow"]


def test_bad_input_is_refused_before_any_framework_is_asked(asked):
    with pytest.raises(UsageError, match="batch sizes must be at least 1"):
        plan_run(["mlp"], batch_sizes=[0])
    with pytest.raises(UsageError):
        plan_run(["mlp"], timeout_s=-1)
    assert asked == []


def test_a_workload_or_batch_listed_twice_is_one_trial(asked):
    """`run mlp,mlp -b 16,16 -d cpu,cpu` is one trial, as a sweep's grid is; --repeat repeats."""
    specs = plan_run(["resnet", "resnet", "resnet:depth=56", "resnet"], devices=["cpu", "cpu"],
                     batch_sizes=[16, 16, 8])
    assert [(s.workload, s.workload_options, s.batch_size) for s in specs] == [
        ("resnet", {}, 16), ("resnet", {}, 8), ("resnet", {"depth": 56}, 16), ("resnet", {"depth": 56}, 8)]
