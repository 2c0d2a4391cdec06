"""What to run (TrialSpec), how to measure it (MeasureOptions) and what came out (Result).

These are the typed boundaries between the CLI, the runner, the child process and the store.
Everything here is plain data that round-trips through JSON.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field, field_validator, model_validator

from rigbench.compile_modes import CompileMode, compile_label, compile_mode
from rigbench.metrics import METRIC_NAMES, Metrics
from rigbench.numlimits import INPUT, Int64, Seconds
from rigbench.rank_record import RankRecord
from rigbench.step_windows import timing_samples
from rigbench.workloads import WORKLOADS

#: Bumped whenever a stored Result changes meaning; stored with every database.
SCHEMA_VERSION = 1

#: fp32: plain float32. tf32: float32 storage with TensorFloat-32 matrix maths (NVIDIA Ampere and
#: later). bf16/fp16: autocast mixed precision (fp16 with loss scaling on CUDA).
Precision = Literal["fp32", "tf32", "bf16", "fp16"]
PRECISIONS: tuple[str, ...] = get_args(Precision)
#: interrupted: a training run stopped by Ctrl-C or SIGTERM after at least one finished epoch,
#: stored with those epochs (a speed trial stopped half-way is not stored at all).
Status = Literal["ok", "oom", "crash", "timeout", "diverged", "unsupported", "interrupted"]
STATUSES: tuple[str, ...] = get_args(Status)
#: speed: the timing protocol on a resident synthetic batch (`rigbench run`); probe: a max-batch
#: memory probe, the same step timed only PROBE_STEPS times with no minimum time (its speed is
#: no measurement); train: epochs on a real data set (`rigbench train`); lr_find: a
#: learning-rate range test (`rigbench lr-find`).
Kind = Literal["speed", "probe", "train", "lr_find"]
KINDS: tuple[str, ...] = get_args(Kind)
#: A max-batch probe times this many steps with no minimum time: it needs only the steady-state
#: memory (one warm-up step creates the optimiser's state, two timed ones reach the peak).
PROBE_STEPS = 2

#: The fields of a TrialSpec that make two trials the same configuration: what runs, where and
#: how. Left out: the measurement options and the seed, which change how long or how often a
#: configuration is measured, not what it is. `TrialSpec.config_key` is built from this tuple,
#: so a new configuration field is added here once and every comparison picks it up.
CONFIG_FIELDS: tuple[str, ...] = (
    "kind", "workload", "workload_revision", "workload_options", "framework", "device", "world_size", "nodes",
    "data_parallel", "batch_size", "precision", "threads", "lr", "compile", "channels_last", "train", "lr_find",
)


#: `MeasureOptions.energy`: "measure" reads counters only; "estimate" also stores a labelled
#: TDP x utilisation estimate for the sources without one (never mixed with measured figures).
EnergyMode = Literal["measure", "estimate"]
ENERGY_MODES: tuple[str, ...] = get_args(EnergyMode)


class MeasureOptions(BaseModel):
    """The measurement protocol's knobs (docs/METHODOLOGY.md explains each). Input models
    (this, the option blocks, TrialSpec, SweepSpec) follow numlimits' bounds."""

    model_config = INPUT

    warmup_steps: Int64 = Field(3, ge=1, description="at least this many untimed steps first")
    warmup_seconds: Seconds = Field(0.5, ge=0, description="...and for at least this long after the first step")
    min_steps: Int64 = Field(10, ge=2, description="time at least this many steps")
    min_seconds: Seconds = Field(2.0, ge=0, description="...and keep timing for at least this long")
    max_steps: Int64 = Field(100_000, ge=2, description="stop timing after this many steps")
    timeout_s: Seconds = Field(600.0, gt=0, description="kill the trial's process after this long")
    memory_limit_bytes: Int64 | None = Field(None, gt=0, description="cap on the trial's memory (CPU)")
    sample_interval_s: Seconds = Field(0.1, gt=0, description="trackers sample this often")
    # How a result is measured, not what is trained: stays out of CONFIG_FIELDS, so a trial with
    # an estimate compares with one without (its measured figures are the same kind).
    energy: EnergyMode = Field(
        "measure", description="estimate: also store a TDP x utilisation estimate, labelled as such, "
                               "for energy sources without a counter (analysis/energy_estimate.py)")

    @classmethod
    def quick(cls, **overrides: Any) -> MeasureOptions:
        """A short protocol for smoke runs (`--quick`): fewer steps, shorter windows."""
        values: dict[str, Any] = dict(warmup_steps=1, warmup_seconds=0.0, min_steps=3,
                                      min_seconds=0.5, sample_interval_s=0.05)
        values.update(overrides)
        return cls(**values)


class TrainOptions(BaseModel):
    """What makes a trial a training run on real data (`rigbench train`), not a speed test."""

    model_config = INPUT

    dataset: str
    data_dir: str | None = None
    download: bool = True
    epochs: Int64 = Field(..., ge=1)
    target_accuracy: float | None = Field(None, gt=0, le=1, description="fraction, e.g. 0.9")
    target_loss: float | None = Field(None, gt=0, description="held-out loss, e.g. 1.5 (nats per token)")
    input_mode: Literal["resident", "loader"] = "resident"
    workers: Int64 = Field(0, ge=0, description="loader worker processes (input_mode=loader)")
    pin_memory: bool = False
    max_train_samples: Int64 | None = Field(None, ge=1, description="use only this many training samples")


class EpochRecord(BaseModel):
    """One epoch of a training run: train and held-out figures, with where the time went."""

    epoch: int
    steps: int
    train_loss: float  # mean over the epoch's steps
    eval_loss: float | None = None
    accuracy: float | None = None  # held-out, fraction; None for gan/autoencoder
    train_seconds: float  # the epoch's training steps, input pipeline included; no evaluation
    eval_seconds: float
    input_seconds: float = 0.0  # waiting for the next batch (loader mode)
    copy_seconds: float = 0.0  # host-to-device copies (loader mode)
    extra: dict[str, float] = Field(default_factory=dict)  # loss_d/loss_g (gan), recon_mse (autoencoder)
    ended_at: float | None = None  # time.time() at the end of its evaluation (energy per epoch)


class LrFindOptions(BaseModel):
    """A learning-rate range test (`rigbench lr-find`): the lr grows exponentially from
    `start_lr` to `end_lr` over at most `steps` steps on real data, and the test stops when the
    smoothed loss exceeds `diverge_factor` times its minimum."""

    model_config = INPUT

    dataset: str
    data_dir: str | None = None
    start_lr: float = Field(1e-6, gt=0)
    end_lr: float = Field(10.0, gt=0)
    steps: Int64 = Field(100, ge=5)
    smoothing: float = Field(0.05, gt=0, lt=1, description="weight of the newest loss in the moving average")
    diverge_factor: float = Field(4.0, gt=1)


class MaxBatchSearch(BaseModel):
    """What a max-batch search was asked (`rigbench max-batch --start --max --tolerance
    --memory-limit`), stored with each of its probes: with it, the probes and the search's own rule
    (experiments/max_batch.next_probe) say whether the search ended by that rule or was stopped
    (Ctrl-C, a timeout, a killed process) with batches still to probe, and a recommendation reads
    only a search made under its own memory limit. Probes stored before it have none."""

    model_config = INPUT

    start: Int64 = Field(..., ge=1, description="the first batch probed")
    max_batch: Int64 = Field(..., ge=1, description="no batch above this is probed (--max)")
    tolerance: float = Field(..., ge=0, lt=1, description="bisection ends at hi - lo <= max(1, tolerance x lo)")
    leap: Int64 = Field(2, ge=2, description="the most the batch multiplies by in one step before an out-of-memory, "
                        "where the memory line allows (next_probe): 8 since 2026-11-28; 2, doubling, before")
    memory_limit: Literal["default", "given"] | None = Field(
        None, description="on the CPU, what set the probes' cap (measure.memory_limit_bytes): `default`, a share "
        "of the RAM available when the search started, or `given`, --memory-limit; None on a GPU, whose limit is "
        "its memory, and in searches stored before it was recorded (experiments/search_limits)")


class TrialSpec(BaseModel):
    """One trial: a workload trained on one device with one configuration."""

    model_config = INPUT

    kind: Kind = Field("speed", description="speed, probe, train or lr_find; inferred for old stored specs")
    workload: str
    workload_revision: Int64 = Field(1, ge=1, description="the revision of the workload's network "
                                   "(Workload.revision); filled in with the current one when absent")
    workload_options: dict[str, Int64 | float | str] = Field(default_factory=dict)
    framework: str = "torch"
    device: str = "cpu"
    batch_size: Int64 = Field(..., ge=1)
    precision: Precision = "fp32"
    threads: Int64 | None = Field(None, ge=1, description="CPU threads for the framework; None = its default")
    lr: float | None = Field(None, gt=0, description="learning rate; None = the workload's default")
    seed: Int64 = 0
    world_size: Int64 = Field(1, ge=1, description="processes that train this trial together (data parallel)")
    nodes: Int64 = Field(1, ge=1, description="machines the world_size ranks are spread over, as many on each")
    data_parallel: bool = Field(False, description="one rank under the data-parallel wrapper (its cost); see is_data_parallel")
    measure: MeasureOptions = Field(default_factory=MeasureOptions)
    compile: CompileMode = Field("off", description="the framework's graph compiler: off or torch.compile's mode")
    channels_last: bool = Field(False, description="NHWC memory layout for convolutional workloads")
    train: TrainOptions | None = Field(None, description="set for `rigbench train` trials")
    lr_find: LrFindOptions | None = Field(None, description="set for `rigbench lr-find` trials")
    # Not in CONFIG_FIELDS: what the search asked, not what the probe ran
    search: MaxBatchSearch | None = Field(None, description="set for max-batch probes: the search they belong to")

    @model_validator(mode="before")
    @classmethod
    def _infer_kind(cls, data: Any) -> Any:
        """Specs stored before `kind` existed say what they are by their option blocks; specs
        stored before kind "probe" existed (max-batch stored its probes as "speed") by their
        timing (`is_probe_timing`). The rule lives here, not in each reader, so that database
        rows, bundles (validated strictly, not through store/lenient.py) and the shipped
        reference machines are all read alike."""
        if not isinstance(data, dict):
            return data
        kind = data.get("kind")
        if kind is None:
            kind = "train" if data.get("train") else "lr_find" if data.get("lr_find") else "speed"
        if kind == "speed" and is_probe_timing(data.get("measure")):
            kind = "probe"
        return data if kind == data.get("kind") else {**data, "kind": kind}

    @field_validator("compile", mode="before")
    @classmethod
    def _compile_mode(cls, value: Any) -> Any:
        return compile_mode(value)

    @property
    def compiled(self) -> bool:
        """The framework's graph compiler is on (any mode)."""
        return self.compile != "off"

    @property
    def is_data_parallel(self) -> bool:
        """Under the data-parallel wrapper: many ranks always, one when asked (the key and row say this)."""
        return self.world_size > 1 or self.data_parallel

    @property
    def compile_label(self) -> str:
        return compile_label(self.compile)

    @property
    def ranks_per_node(self) -> int:
        """The trial's processes on each machine (--processes): world_size over the nodes."""
        return self.world_size // self.nodes

    @property
    def world_label(self) -> str:
        """`x2` for two ranks, `x1` for one rank under the data-parallel wrapper, "" otherwise."""
        return f"x{self.world_size}" if self.is_data_parallel else ""

    @model_validator(mode="before")
    @classmethod
    def _current_revision(cls, data: Any) -> Any:
        """A new spec measures the network this rigbench builds (a stored result's spec without
        a revision is of revision 1: Result._revision_1)."""
        if isinstance(data, dict) and data.get("workload_revision") is None:
            workload = WORKLOADS.get(str(data.get("workload")))
            data = {**data, "workload_revision": workload.revision if workload else 1}
        return data

    @model_validator(mode="after")
    def _kind_matches_options(self) -> TrialSpec:
        if (self.kind == "train") != (self.train is not None):
            raise ValueError("kind 'train' and the train options go together")
        if (self.kind == "lr_find") != (self.lr_find is not None):
            raise ValueError("kind 'lr_find' and the lr_find options go together")
        if self.search is not None and self.kind != "probe":
            raise ValueError("only a probe (kind 'probe') belongs to a max-batch search")
        if self.world_size % self.nodes:
            raise ValueError(f"world_size {self.world_size} does not share out over {self.nodes} nodes")
        return self

    def config_key(self, ignore: Collection[str] = ()) -> tuple[tuple[str, Any], ...]:
        """The one "same configuration" key (CONFIG_FIELDS as hashable (field, value) pairs),
        without the fields in `ignore` (e.g. `("device",)` to pair a GPU trial with its CPU twin)."""
        unknown = set(ignore) - set(CONFIG_FIELDS)
        if unknown:
            raise ValueError(f"not configuration fields: {', '.join(sorted(unknown))}")
        fields = [f for f in CONFIG_FIELDS if f not in ignore]
        data = self.model_dump(mode="json", include=set(fields)) | {"data_parallel": self.is_data_parallel}
        return tuple((f, _hashable(data[f])) for f in fields)

    def canonical_json_digest(self) -> str:
        """A short digest of canonical_json(): the same on every machine given the same spec."""
        import hashlib

        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:16]

    def canonical_json(self) -> str:
        """The whole spec, measurement options included, as canonical JSON: a sweep's grid point
        and the key that resumes it."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))

    def effective_lr(self) -> float | None:
        """The learning rate the trial trains with: its own, else its workload's default (the
        stored spec keeps None, so the configuration key still says "the default"). None for
        an lr range test, which sweeps the lr, and for a workload this rigbench does not know."""
        if self.lr is not None or self.kind == "lr_find":
            return self.lr
        workload = WORKLOADS.get(self.workload)
        return workload.default_lr if workload is not None else None

    def label(self) -> str:
        """Short human label, e.g. `cnn torch cpu b128 fp32` (+ t4, x2 for two data-parallel ranks
        (`world_label`), compile, channels-last, and `probe` for a max-batch probe, so that it
        never reads as a speed trial)."""
        opts = ",".join(f"{k}={v}" for k, v in sorted(self.workload_options.items()))
        name = f"{self.workload}:{opts}" if opts else self.workload
        text = f"{name} {self.framework} {self.device} b{self.batch_size} {self.precision}"
        if self.threads:
            text += f" t{self.threads}"
        if self.world_label:
            text += f" {self.world_label}"
        if self.compiled:
            text += f" {self.compile_label}"
        if self.channels_last:
            text += " channels-last"
        if self.lr is not None:
            text += f" lr={self.lr:g}"
        if self.kind == "probe":
            text += " probe"
        return text


def is_probe_timing(measure: MeasureOptions | dict[str, Any] | None) -> bool:
    """Timed like a max-batch probe: PROBE_STEPS timed steps and no minimum time. Such a trial
    has no speed figure worth the name, whatever stored it, so a "speed" spec timed this way
    is read as kind "probe" (how max-batch's probes were told apart before that kind existed)."""
    if isinstance(measure, MeasureOptions):
        measure = measure.model_dump()
    if not isinstance(measure, dict):
        return False
    return measure.get("min_steps") == PROBE_STEPS and measure.get("min_seconds") == 0


def _hashable(value: Any) -> Any:
    """Dicts and lists (workload options, train options) as canonical JSON, so keys hash."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


class Result(BaseModel):
    """A finished trial, successful or not, as stored and exported."""

    id: int | None = None
    run_id: str
    created_at: str
    spec: TrialSpec
    status: Status
    error: str | None = None
    device_name: str | None = None
    threads: int | None = None
    metrics: Metrics = Field(default_factory=Metrics)
    software: dict[str, Any] = Field(default_factory=dict)
    step_times_s: list[float] = Field(default_factory=list)
    step_windows: list[int] = Field(
        default_factory=list, description="steps timed together per window, in order (rigbench/step_windows.py: "
                                          "a host timer on an asynchronous device); empty: each step timed alone")
    tracker_samples: list[dict[str, float | None]] = Field(default_factory=list)
    epoch_records: list[EpochRecord] = Field(default_factory=list)
    loss_curve: list[float] = Field(default_factory=list)
    lr_curve: list[tuple[float, float, float]] = Field(default_factory=list)
    ranks: list[RankRecord] = Field(default_factory=list, description="each rank's record (data parallel)")
    schema_version: int = SCHEMA_VERSION

    @field_validator("spec", mode="before")
    @classmethod
    def _revision_1(cls, spec: Any) -> Any:
        """A result stored before workload revisions existed measured revision 1 of its
        network (TrialSpec would otherwise take it for the current one)."""
        if isinstance(spec, dict) and "workload_revision" not in spec:
            spec = {**spec, "workload_revision": 1}
        return spec

    def timing_samples(self) -> list[float]:
        """One figure per measurement of the step time: per window where steps were timed
        together, else per step (rigbench/step_windows.py). Intervals and tests take these."""
        return timing_samples(self.step_times_s, self.step_windows)

    def row(self) -> dict[str, Any]:
        """The flat record that `--json` and `results export` print (documented in README):
        ROW_HEAD_COLUMNS, every metric in METRICS order, then `software` and `final_extra`."""
        head = {c: getattr(self if c in Result.model_fields else self.spec, c) for c in ROW_HEAD_COLUMNS}
        head["lr"] = self.spec.effective_lr()  # the lr used, also when it was the default
        head["data_parallel"] = self.spec.is_data_parallel
        metrics = {m: _flat(getattr(self.metrics, m)) for m in METRIC_NAMES}
        return {
            **head,
            **metrics,
            "software": self.software,
            # the last epoch's other losses: loss_d/loss_g (GAN), recon_mse (autoencoder)
            "final_extra": self.epoch_records[-1].extra if self.epoch_records else None,
            "ranks": [rank.model_dump() for rank in self.ranks],
        }


#: The columns of Result.row() before the metrics, in order: the Result's field where it has
#: one (so `threads` is the count the framework reported, not the one asked for), else the
#: TrialSpec's; `lr` is the one used (TrialSpec.effective_lr).
ROW_HEAD_COLUMNS: tuple[str, ...] = (
    "id", "run_id", "created_at", "workload", "workload_options", "framework", "device",
    "device_name", "batch_size", "precision", "threads", "lr", "compile", "channels_last", "kind",
    "world_size", "data_parallel", "status", "error",
)


def _flat(value: Any) -> Any:
    """Tuples (confidence intervals) as lists, as JSON writes them."""
    return list(value) if isinstance(value, tuple) else value
