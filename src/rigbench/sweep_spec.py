"""A sweep's grid (`rigbench sweep`, a sweep TOML file): the lists whose product is its trials.
Apart from spec.py, which holds what one trial is."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field, field_validator

from rigbench.compile_modes import CompileMode, compile_mode
from rigbench.numlimits import INPUT, Int64, Seconds
from rigbench.spec import EnergyMode, Precision


def _as_list(value: Any) -> Any:
    """`batch_sizes = 64` in a file means `[64]`."""
    return value if isinstance(value, (list, tuple)) else [value]


class SweepSpec(BaseModel):
    """A grid of trials (`rigbench sweep`): the product of every list. The keys are those of a
    sweep TOML file (examples/sweep.toml); an empty list means what `rigbench run` does
    without the flag (every workload, every device, each workload's batch, fp32, the
    framework's threads, the workload's lr, compile off, channels-last off, one process)."""

    model_config = INPUT

    workloads: list[str] = Field(default_factory=list, description="NAME or NAME:key=value")
    devices: list[str] = Field(default_factory=list)
    # Numbers are strict: a TOML `true` is not batch 1, nor "16" a batch (pydantic's lax mode
    # would take both); an int is still a valid float.
    batch_sizes: list[Annotated[Int64, Field(ge=1, strict=True)]] = Field(default_factory=list)
    precisions: list[Precision] = Field(default_factory=list)
    threads: list[Annotated[Int64, Field(ge=1, strict=True)]] = Field(default_factory=list)
    lrs: list[Annotated[float, Field(gt=0, strict=True)]] = Field(default_factory=list)
    compile: list[CompileMode] = Field(default_factory=list, description='off, on ("default") or a torch.compile mode')
    channels_last: list[Annotated[bool, Field(strict=True)]] = Field(default_factory=list)
    processes: list[Annotated[Int64, Field(ge=1, strict=True)]] = Field(
        default_factory=list, description="data-parallel ranks per trial (world size); default 1")
    framework: list[str] = Field(default_factory=lambda: ["torch"], description="one or more frameworks")
    steps: Int64 | None = Field(None, ge=2, strict=True, description="time at least this many steps")
    seconds: Seconds | None = Field(None, ge=0, strict=True, description="...and at least this many seconds")
    quick: bool = Field(False, strict=True)  # `quick = "yes"` is a mistake, not true
    timeout: Seconds | None = Field(None, gt=0, strict=True, description="seconds per trial")
    memory_limit: Int64 | None = Field(None, gt=0, strict=True,
                                     description="bytes per trial; a file may write '2GiB'")
    energy: EnergyMode = "measure"

    @field_validator("workloads", "devices", "batch_sizes", "precisions", "threads", "lrs",
                     "channels_last", "processes", "framework", mode="before")
    @classmethod
    def _one_is_a_list(cls, value: Any) -> Any:
        return _as_list(value)

    @field_validator("compile", mode="before")
    @classmethod
    def _compile_settings(cls, value: Any) -> Any:
        """`compile = [false, true]` (a file from before the modes) means off and default."""
        return [compile_mode(v) for v in _as_list(value)]

    @field_validator("memory_limit", mode="before")
    @classmethod
    def _size(cls, value: Any) -> Any:
        from rigbench.errors import UsageError
        from rigbench.units import parse_memory_limit

        # a whole number is bytes (a bool is left to the strict type, which refuses it)
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            try:
                return parse_memory_limit(value, "memory_limit")
            except UsageError as exc:
                raise ValueError(str(exc)) from None
        return value
