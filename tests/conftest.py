import pytest

from rigbench.spec import MeasureOptions, TrialSpec


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path_factory, monkeypatch):
    """Never write into the user's real database or cache during tests."""
    base = tmp_path_factory.mktemp("rigbench-home")
    monkeypatch.setenv("RIGBENCH_DB", str(base / "default.db"))
    monkeypatch.setenv("RIGBENCH_CACHE_DIR", str(base / "cache"))


def quick_spec(workload="mlp", batch_size=8, **measure) -> TrialSpec:
    """A short trial on the CPU; `measure` overrides MeasureOptions.quick()."""
    extra = {k: measure.pop(k) for k in ("lr", "workload_options") if k in measure}
    return TrialSpec(workload=workload, device="cpu", batch_size=batch_size, threads=1,
                     measure=MeasureOptions.quick(**measure), **extra)
