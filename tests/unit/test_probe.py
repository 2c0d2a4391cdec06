"""The framework probe's grouping into child processes and its per-framework answers."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rigbench.errors import UsageError
from rigbench.runner import probe


def test_keras_on_a_backend_is_asked_in_its_native_frameworks_child():
    every = ["torch", "jax", "tensorflow", "keras-jax", "keras-torch"]
    assert probe.child_groups(every) == [("torch", "keras-torch"), ("jax", "keras-jax"), ("tensorflow",)]
    # without its native framework (flax missing, say) it has a child of its own
    assert probe.child_groups(["torch", "keras-jax"]) == [("torch",), ("keras-jax",)]


def _adapter(software):
    return SimpleNamespace(environment=lambda spec: {"RIGBENCH_PROBE_TEST": spec.framework},
                           software=software, list_devices=lambda: [{"id": "cpu"}])


def test_one_frameworks_failure_is_its_own_answer_and_not_its_partners(monkeypatch):
    def broken():
        raise ImportError("keras is broken\nsecond line")

    adapters = {"torch": _adapter(lambda: {"torch": "2"}), "keras-torch": _adapter(broken)}
    monkeypatch.setattr(probe, "load_adapter", adapters.__getitem__)
    monkeypatch.setenv("RIGBENCH_PROBE_TEST", "")
    found = probe.probe_here(["torch", "keras-torch"])
    assert found["torch"] == {"framework": "torch", "software": {"torch": "2"}, "devices": [{"id": "cpu"}]}
    assert found["keras-torch"] == {"error": "ImportError: keras is broken"}
    monkeypatch.setitem(probe._answers, "keras-torch", found["keras-torch"])
    with pytest.raises(UsageError, match=r"^keras-torch failed to start in a child process: ImportError: keras is broken$"):
        probe.probe("keras-torch")
