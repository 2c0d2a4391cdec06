"""Reading stored results leniently: a field a newer or older rigbench wrote that this one does
not know is dropped, so renaming one spec field never makes a whole database unreadable.

Only for reading what is stored: user input (TrialSpec and its option blocks) is still
validated strictly, with extra="forbid".
"""

from __future__ import annotations

import functools
import types
import typing
from typing import Any

from pydantic import BaseModel

from rigbench.result_rules import non_finite_figure
from rigbench.spec import Result


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation can hold: `X`, `X | None`, `list[X]`, `dict[str, X]`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        found += _models_in(arg)
    return found


@functools.cache
def _fields(model: type[BaseModel]) -> dict[str, tuple[type[BaseModel] | None, Any]]:
    """Each field of `model` -> (the one model it holds, or None; its annotation's origin).
    Worked out once per model: walking the annotations again for every stored row was most of
    the time a command over a fleet's database spent reading it (20,000 rows: 8 s of 11)."""
    plan: dict[str, tuple[type[BaseModel] | None, Any]] = {}
    for key, field in model.model_fields.items():
        nested = _models_in(field.annotation)
        plan[key] = (nested[0] if len(nested) == 1 else None, typing.get_origin(field.annotation))
    return plan


def drop_unknown(model: type[BaseModel], data: Any) -> Any:
    """`data` without the keys `model` (and the models nested in it) does not declare."""
    if not isinstance(data, dict):
        return data
    fields = _fields(model)
    out = {}
    for key, value in data.items():
        if key not in fields:
            continue
        nested, origin = fields[key]
        if nested is not None:
            if isinstance(value, list) and origin is list:
                value = [drop_unknown(nested, v) for v in value]
            elif isinstance(value, dict) and origin is dict:
                value = {k: drop_unknown(nested, v) for k, v in value.items()}
            elif origin in (None, typing.Union, types.UnionType):
                value = drop_unknown(nested, value)
        out[key] = value
    return out


def read_result(data: dict[str, Any]) -> Result:
    """A stored Result, unknown fields dropped at every level; ValidationError if it still
    cannot be read (a missing required field, a value of the wrong type, a spec outside
    rigbench.numlimits such as an infinite or null timeout), ValueError if a figure is inf or
    NaN (result_rules; rigbench writes neither, JSON has neither: such a row was edited) or an
    `ok` trial's samples/s is 0 or less (the runner stores such a trial as a crash: result_rules;
    read as a figure, it broke the geometric mean of every command over the database)."""
    result = Result.model_validate(drop_unknown(Result, data))
    where = non_finite_figure(result)
    if where is not None:
        raise ValueError(f"{where}: not a finite number")
    speed = result.metrics.samples_per_s
    if result.status == "ok" and speed is not None and not speed > 0:
        raise ValueError(f"metrics.samples_per_s: an ok trial's must be more than 0, got {speed:g}")
    return result
