"""A compiled trial says what its graph compiler did (software key "compile"): the child asks the
adapter once the steps have run, an eager trial never asks, and a description that fails costs
the trial nothing but the description. The torch adapter's own description of a real compiled
trainer is in tests/unit/test_torch_variants.py."""

from types import SimpleNamespace

from rigbench.runner import child
from rigbench.spec import MeasureOptions, TrialSpec
from tests.unit.fake_trainer import ScriptedTrainer


def _adapter(compilation):
    return SimpleNamespace(NAME="fake", environment=lambda spec: {}, prepare=lambda threads: None,
                           software=lambda: {"fake": "1", "num_threads": None}, count=lambda w, o: (1, 1.0),
                           build=lambda spec, w: ScriptedTrainer(), is_oom=lambda exc: False,
                           compilation=compilation)


def _trial(compile_):
    return TrialSpec(workload="mlp", batch_size=8, compile=compile_,
                     measure=MeasureOptions.quick(min_seconds=0.0, warmup_steps=1))


def test_a_compiled_trial_stores_what_the_compiler_did_after_its_steps(monkeypatch):
    steps_before_asked = []

    def compilation(spec):
        steps_before_asked.append(spec.compile)
        return "fake compile reduce-overhead: 1 graph"
    monkeypatch.setattr(child, "load_adapter", lambda name: _adapter(compilation))
    report = child.run_trial(_trial("reduce-overhead"))
    assert report.status == "ok" and report.step_times_s  # measured first, then described
    assert report.software["compile"] == "fake compile reduce-overhead: 1 graph"
    assert steps_before_asked == ["reduce-overhead"]


def test_an_eager_trial_never_asks_and_a_failing_description_loses_nothing(monkeypatch, capsys):
    def compilation(spec):
        raise RuntimeError("counters moved in this torch")
    monkeypatch.setattr(child, "load_adapter", lambda name: _adapter(compilation))
    eager = child.run_trial(_trial("off"))
    assert eager.status == "ok" and "compile" not in eager.software  # off: never asked, never raised
    compiled = child.run_trial(_trial("default"))
    assert compiled.status == "ok" and compiled.step_times_s and "compile" not in compiled.software
    assert "rigbench: describing the compilation failed: counters moved in this torch" in capsys.readouterr().err


def test_specs_stored_before_the_modes_read_as_modes():
    """Databases, bundles and reference machines hold `compile: true/false` from before the
    modes: they load as the default mode and off, with labels and configuration keys to match."""
    old_on = TrialSpec.model_validate({"workload": "mlp", "batch_size": 8, "compile": True})
    old_off = TrialSpec.model_validate({"workload": "mlp", "batch_size": 8, "compile": False})
    assert (old_on.compile, old_on.compiled, old_off.compile, old_off.compiled) == ("default", True, "off", False)
    assert old_on.label() == "mlp torch cpu b8 fp32 compile"
    assert old_on.config_key() == TrialSpec(workload="mlp", batch_size=8, compile="default").config_key()
    mode = TrialSpec(workload="mlp", batch_size=8, compile="max-autotune")
    assert mode.label() == "mlp torch cpu b8 fp32 compile max-autotune" and mode.config_key() != old_on.config_key()
