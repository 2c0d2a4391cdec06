"""numlimits is the one rule set for numbers: every integer field of every input model is
bounded by the database's range and every float field refuses inf and NaN (a field added
later without Int64 fails here), and result_rules holds a Result's figures to what the
runner measures."""

import typing

import pytest
from pydantic import BaseModel, ValidationError

from rigbench.metrics import Metrics
from rigbench.numlimits import MAX_INT, MAX_SECONDS, number_problem
from rigbench.result_rules import result_problems
from rigbench.spec import LrFindOptions, MaxBatchSearch, MeasureOptions, Result, TrainOptions, TrialSpec
from rigbench.sweep_spec import SweepSpec

BASES: dict[type[BaseModel], dict] = {
    TrialSpec: {"workload": "mlp", "batch_size": 8}, MeasureOptions: {}, SweepSpec: {},
    TrainOptions: {"dataset": "digits", "epochs": 1}, LrFindOptions: {"dataset": "digits"},
    MaxBatchSearch: {"start": 8, "max_batch": 64, "tolerance": 0.0},
}


def _number_fields(model: type[BaseModel]):
    for name, field in model.model_fields.items():
        kinds = set(typing.get_args(field.annotation)) | {field.annotation}
        inner = {a for k in kinds for a in typing.get_args(k)}  # list[X] -> X
        for kind in (int, float):
            if kind in kinds or kind in inner or any(kind in typing.get_args(a) for a in inner):
                yield name, kind, typing.get_origin(field.annotation)


@pytest.mark.parametrize("model", list(BASES))
def test_every_number_field_of_an_input_model_is_bounded(model):
    fields = list(_number_fields(model))
    assert fields
    for name, kind, container in fields:
        if kind is int and container is dict:
            continue  # workload options: int | float | str, so a huge int is read as a float
        for bad in ([MAX_INT + 1] if kind is int else [float("inf"), float("nan")]):
            value = [bad] if container is list else {"key": bad} if container is dict else bad
            with pytest.raises(ValidationError, match="less than or equal to|finite number"):
                model.model_validate({**BASES[model], name: value}, strict=kind is int)


def test_number_problem_is_the_flags_rule():
    assert number_problem(MAX_INT) is None and number_problem(-MAX_INT) is None and number_problem(True) is None
    assert number_problem(MAX_INT + 1) == f"must be at most {MAX_INT} (the largest whole number rigbench stores), got {MAX_INT + 1}"
    assert number_problem(-MAX_INT - 1).startswith(f"must be at least {-MAX_INT}")
    assert number_problem(float("-inf")) == "must be a finite number, got -inf"
    assert MeasureOptions(timeout_s=MAX_SECONDS).timeout_s == MAX_SECONDS


def _result(status="ok", kind="speed", **metrics):
    spec = TrialSpec(workload="mlp", batch_size=8, kind=kind,
                     lr_find={"dataset": "digits"} if kind == "lr_find" else None)
    return Result(run_id="r", created_at="t", spec=spec, status=status, metrics=Metrics(**metrics))


def test_result_rules():
    assert result_problems(_result(samples_per_s=10.0)) == []
    assert result_problems(_result(kind="lr_find")) == []  # a range test has no throughput
    assert result_problems(_result(status="oom")) == []
    assert result_problems(_result()) == ["metrics.samples_per_s: missing, which an ok speed trial always measures"]
    assert result_problems(_result(status="crash", samples_per_s=0.0)) == [
        "metrics.samples_per_s: must be more than 0, got 0"]
    nan = _result(samples_per_s=10.0, energy_j=float("nan"))
    assert result_problems(nan) == ["metrics.energy_j: must be a finite number"]
    steps = _result(samples_per_s=10.0).model_copy(update={"step_times_s": [0.1, -0.1], "tracker_samples": [{"x": float("nan")}]})
    assert result_problems(steps) == ["step_times_s[1]: a step time must be at least 1e-06 s, got -0.1"]
    tiny = _result(samples_per_s=8e306).model_copy(update={"step_times_s": [1e-306]})
    assert result_problems(tiny) == ["step_times_s[0]: a step time must be at least 1e-06 s, got 1e-306"]


def test_an_ok_trials_throughput_is_its_global_batch_over_its_median_step():
    """An imported samples/s ten times its own step times' showed one figure in `results list`
    and `roofline`, another in `score` and `compare` (which work from the step times)."""
    assert result_problems(_result(samples_per_s=80.0, step_time_ms_median=100.0)) == []
    assert result_problems(_result(samples_per_s=800.0, step_time_ms_median=100.0)) == [
        "metrics.samples_per_s: 800 is not the global batch over the median step time (80)"]
    assert result_problems(_result(samples_per_s=80.0, step_time_ms_median=1e-300)) == [
        "metrics.step_time_ms_median: must be at least 0.001 ms, got 1e-300"]
    two_ranks = _result(samples_per_s=160.0, step_time_ms_median=100.0)
    two_ranks.spec = two_ranks.spec.model_copy(update={"world_size": 2})
    assert result_problems(two_ranks) == []  # 2 ranks x batch 8 a step
    assert result_problems(_result(status="crash", samples_per_s=800.0, step_time_ms_median=100.0)) == []


def test_an_ok_trials_median_and_interval_come_from_its_own_step_times():
    """An imported CI of [1, 1e308] drew the report's error bars to 1e308: the median must be
    the raw steps' and the interval within batch / slowest to batch / fastest step."""
    steps = [0.1, 0.2, 0.4]  # batch 8: 80 samples/s at the median, 20 to 80 between the extremes

    def trial(**metrics):
        return _result(**{"samples_per_s": 40.0, "step_time_ms_median": 200.0, **metrics}).model_copy(
            update={"step_times_s": steps})

    assert result_problems(trial(samples_per_s_ci=(20.0, 80.0))) == []
    assert result_problems(trial(samples_per_s_ci=(1.0, 1e308))) == [
        "metrics.samples_per_s_ci: [1, 1e+308] is not within the global batch over the slowest and the "
        "fastest step ([20, 80])"]
    assert result_problems(trial(samples_per_s=80.0, step_time_ms_median=100.0)) == [
        "metrics.step_time_ms_median: 100 is not the median of step_times_s (200)"]
