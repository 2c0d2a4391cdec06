import json
from types import SimpleNamespace

from rigbench.runner.count_cache import cached_count
from rigbench.workloads import WORKLOADS


def fake_adapter(calls):
    def count(workload, options):
        calls.append((workload.name, dict(options)))
        return 123, 4.5e6
    return SimpleNamespace(NAME="torch", software=lambda: {"torch": "9.9"}, count=count)


def test_counts_are_cached_per_workload_options_and_version(tmp_path, monkeypatch):
    monkeypatch.setenv("RIGBENCH_CACHE_DIR", str(tmp_path))
    calls = []
    adapter = fake_adapter(calls)
    resnet = WORKLOADS["resnet"]
    assert cached_count(adapter, resnet, {"depth": 20}) == (123, 4.5e6)
    assert cached_count(adapter, resnet, {"depth": 20}) == (123, 4.5e6)
    assert len(calls) == 1  # the second came from the file
    cached_count(adapter, resnet, {"depth": 56})
    assert len(calls) == 2  # other options: counted again
    adapter.software = lambda: {"torch": "10.0"}
    cached_count(adapter, resnet, {"depth": 20})
    assert len(calls) == 3  # other framework version: counted again
    assert len(json.loads((tmp_path / "counts.json").read_text())) == 3


def test_corrupt_cache_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("RIGBENCH_CACHE_DIR", str(tmp_path))
    (tmp_path / "counts.json").write_text("{not json")
    calls = []
    assert cached_count(fake_adapter(calls), WORKLOADS["cnn"], {}) == (123, 4.5e6)
    assert calls
