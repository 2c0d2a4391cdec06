"""The framework adapter contract: the one place that says what an adapter must provide.

An adapter is a module, rigbench/frameworks/<name>/__init__.py, registered in
rigbench/frameworks/__init__.FRAMEWORKS, whose module-level names implement
`FrameworkAdapter` below. It supplies primitives only: the training loop, the lr range test
and the calibration are written once, framework-free, in rigbench/frameworks/driver/, and
drive the `DataTrainer` that `build` returns and the kernels of `calibration_kernels`.
tests/contract/ runs every installed adapter on every workload against it.

Rules every adapter follows:
- **Imports.** Every import of the framework lives inside its own subpackage, and the
  adapter's `__init__` does not import the framework at module level: `environment()` and
  the registry must work without it. Subpackages are imported only in
  child processes (trials, device probes, counting), never by the CLI's own process.
- **Environment first.** `environment(spec)` returns the variables the child must set
  BEFORE the framework is imported (thread pools and allocators read them once, at start):
  thread counts (OMP/MKL), allocator behaviour (TF_FORCE_GPU_ALLOW_GROWTH,
  XLA_PYTHON_CLIENT_PREALLOCATE=false for TensorFlow/JAX, which otherwise take most GPU
  memory up front). runner/child.py applies it right after loading the adapter module, then
  calls `prepare(threads)` once: the only place an adapter sizes its thread pools.
- **Devices** are named `cpu`, `cuda:N` (NVIDIA, and AMD under ROCm builds that call it
  cuda), `mps`, `xpu:N`, `dml:N`; `cuda:N` is NVML's index N (CUDA_DEVICE_ORDER=PCI_BUS_ID).
  A bare kind (`cuda`) means index 0. `list_devices()` returns `DeviceInfo` rows.
- **Workloads** are framework-neutral facts (rigbench.workloads): only the adapter's model
  builders know a workload by name; loss, targets, layout, optimiser arguments, parts and
  metric are mapped through tables. The workload's analytic FLOPs are the figure of record;
  the adapter's own counter (`count`) only cross-checks them.
- **Timing.** A Trainer's `step()` queues one full training step and returns the loss as an
  unsynchronised device value; a `StepTimer` brackets steps with the device's own
  synchronisation (CUDA events, or frameworks/host_timer.HostTimer: a host clock stopped after
  a device sync once per window of steps; JAX `block_until_ready`, TensorFlow a host copy of
  the loss).
- **Memory.** `allocator_peak_bytes()` is the allocator's peak since the last
  `reset_peak_memory()`, or None where the framework keeps no statistics (the CPU); the
  reset is optional in effect (a no-op where there is nothing to reset) but always callable.
- **Failures.** `build` raises rigbench.errors.UnsupportedError for a combination that cannot
  run (a precision the device lacks) and UsageError for a bad device; `is_oom(exc)` is True
  for the framework's out-of-memory exception and the CPU allocator's failure, so the runner
  reports `oom` rather than `crash`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypedDict

import numpy as np

from rigbench.ranks import RankInfo
from rigbench.spec import TrainOptions, TrialSpec
from rigbench.workloads import Workload


class DeviceInfo(TypedDict):
    """One device a framework can use (`list_devices()`)."""

    id: str  # "cpu", "cuda:0", "mps", "xpu:0", "dml:0"
    kind: str  # cpu | cuda | rocm | mps | xpu | dml
    name: str  # human name, e.g. "NVIDIA H100 80GB HBM3" or the CPU's brand string
    memory_bytes: int | None  # device memory (host RAM for the CPU), None if unknown
    framework: str  # the adapter's NAME


#: Keys every `software()` dict holds: the adapter's NAME -> the framework's version string
#: (the count cache and comparability key on it), and `num_threads` (the intra-op thread
#: count in effect, or None). Any other keys are versions that decide comparability
#: (e.g. "cuda", "cudnn", "hip" for torch; "xla" for JAX), stored with each result as is.
SOFTWARE_KEYS = ("<NAME>", "num_threads")


class CalibrationRow(TypedDict):
    """One measured ceiling of a calibration (frameworks/driver/calibration.py)."""

    kind: str  # matmul | memory_bandwidth | h2d_pageable | h2d_pinned | d2h_pageable | d2h_pinned
    precision: str | None  # matmul rows: fp32 | tf32 | bf16 | fp16
    unit: str  # "FLOP/s" or "B/s"
    status: str  # ok | unsupported | n/a (host copies on a CPU) | failed
    value: float | None  # None unless status is ok
    detail: dict[str, Any]  # how it was measured, or {"reason": ...}


class Calibration(TypedDict):
    """What `rigbench calibrate` measures on one device (frameworks/driver/calibration.calibrate)."""

    device: str
    device_name: str
    device_type: str
    threads: int | None
    quick: bool
    software: dict[str, Any]  # as `software()`
    measurements: list[CalibrationRow]


class CalibrationKernels(Protocol):
    """What a framework supplies to calibrate one device: allocation, one kernel call, and the
    device's clock. Every copy buffer is float32 (nbytes // 4 elements; the driver passes a
    multiple of 4). Nothing here decides a size, a repeat count or a statistic."""

    device_name: str  # human name, e.g. "NVIDIA H100 80GB HBM3" or the CPU's brand string
    device_type: str  # "cpu", "cuda", "mps", ...: the Calibration's device_type
    accelerator: bool  # False on the CPU: the accelerator plans and buffers, host copies
    #: Exceptions that mean a kernel or an allocation failed (out of memory, no kernel for a
    #: dtype): a size past the first ends the climb; at the first size, or for a copy, the
    #: row is `failed` when `is_oom` says so, else `unsupported`.
    errors: tuple[type[Exception], ...]

    def is_oom(self, exc: BaseException) -> bool:
        """True if `exc` reports exhausted memory (the adapter's `is_oom`)."""
        ...

    def precision_problem(self, precision: str) -> str | None:
        """Why the device cannot do `precision` matmuls, known without trying (tf32 off an
        NVIDIA GPU of compute capability 8.0+), or None: others are tried."""
        ...

    def dtype_name(self, precision: str) -> str:
        """The framework's name of the matmul inputs' dtype (stored in the row's detail)."""
        ...

    def matmul(self, precision: str, n: int) -> Callable[[], object]:
        """Allocate two n x n inputs at `precision` (switching TF32 on or off as it needs) and
        return a thunk queueing one n x n matmul, returning its device result unsynchronised."""
        ...

    def copy(self, nbytes: int) -> Callable[[], object]:
        """Allocate an on-device buffer of `nbytes` and return a thunk that reads it once and
        writes `nbytes` once (a copy or a scaling), returning its result unsynchronised."""
        ...

    def timed(self, fn: Callable[[], object], iterations: int) -> float:
        """Seconds of `iterations` back-to-back calls of `fn` (from `matmul` or `copy`), by the
        device's own clock, the device's work included."""
        ...

    def copy_budget(self, nbytes: int) -> int:
        """The copy buffer's bytes given the rule's `nbytes`: smaller where device memory is
        short (torch on CUDA: a quarter of the free memory), else `nbytes`."""
        ...

    def transfer(self, nbytes: int, direction: str, pinned: bool) -> Callable[[], float] | str:
        """A callable doing one host->device ("h2d") or device->host ("d2h") copy of `nbytes`
        from pageable or pinned host memory and returning its own seconds (any preparation,
        such as making a fresh device array, outside the timed part); or, where the framework
        cannot (no pinned host buffers), the reason. Only called on an accelerator."""
        ...

    def software(self) -> dict[str, Any]:
        """The adapter's `software()` (versions, num_threads)."""
        ...


class StepTimer(Protocol):
    """Times individual steps with the device's own synchronisation.

    `start()`/`stop()` bracket one step and must not block on the device (on CUDA they record
    events); `elapsed_s()` is called once after `Trainer.synchronize()` and returns one
    duration per bracketed step, in seconds.
    """

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def elapsed_s(self) -> list[float]: ...


class Trainer(Protocol):
    """One workload, built on one device, with a synthetic batch resident there (the speed
    protocol's `runner/protocol.measure` drives it)."""

    params: int
    device_name: str

    def step(self) -> Any:
        """One full training step (forward, loss, backward, optimiser update of every part).

        Returns the detached loss as a device value *without* synchronising, so that steps
        can be queued back to back on asynchronous devices.
        """

    def synchronize(self) -> None:
        """Block until all queued device work is done."""

    def step_timer(self) -> StepTimer:
        """A fresh timer for this device."""

    def loss_values(self, handles: list[Any]) -> list[float]:
        """Turn loss handles returned by `step()` into floats (one host copy, after a sync)."""

    def allocator_peak_bytes(self) -> int | None:
        """Peak bytes held by the framework's allocator on the device since the last reset;
        None where the framework keeps no allocator statistics (the CPU)."""

    def reset_peak_memory(self) -> None:
        """Start a new window for `allocator_peak_bytes` (a no-op where there is none)."""


class HostLoader(Protocol):
    """Host-side batches for `rigbench train --input loader` (frameworks/driver/batches.py has
    the numpy one every framework may use; torch's DataLoader is another)."""

    def epoch(self, order: np.ndarray, batch_size: int) -> Iterator[tuple[Any, Any]]:
        """The epoch's (images, labels) host batches, in `order`, the last partial batch dropped."""

    def close(self) -> None:
        """Release workers and buffers."""


class DataTrainer(Trainer, Protocol):
    """The primitives the shared loops (frameworks/driver/training.py, lr_range.py) drive on a
    real data set. Data arrive as uint8 images [N, C, H, W] (or flat) and integer labels; a
    "batch" below is the framework's own device value, opaque to the loops: the trainer scales
    images by the workload's input range and makes the targets (class indices, 0/1 floats, the
    input itself, fresh latent noise per step from its own seeded generator)."""

    workload: Workload

    def drop_synthetic_batch(self) -> None:
        """Free the speed protocol's synthetic batch: a training run does not use it."""

    def put_data(self, x: np.ndarray, y: np.ndarray) -> Any:
        """The whole training set on the device (resident mode), placed once, before epoch 1."""

    def put_index(self, order: np.ndarray) -> Any:
        """One epoch's permutation on the device (one copy per epoch, not per step)."""

    def take(self, data: Any, index: Any, start: int, stop: int) -> Any:
        """The batch of rows index[start:stop] of resident `data`, selected on the device."""

    def host_loader(self, x: np.ndarray, y: np.ndarray, options: TrainOptions) -> HostLoader:
        """Host-side batches (loader mode), with the options' workers and pinned memory where
        the framework has them (UnsupportedError where it has not)."""

    def put_batch(self, images: Any, labels: Any) -> Any:
        """One host batch copied to the device; returns when the copy (and scaling) is done."""

    def train_step(self, batch: Any) -> tuple[Any, dict[str, Any]]:
        """One training step on `batch`: (the loss, {part name: its loss} for multi-part
        workloads, else {}), device values, not synchronised."""

    def set_lr(self, lr: float) -> None:
        """Every optimiser's learning rate, without recompiling the step."""

    def evaluation(self) -> AbstractContextManager[Any]:
        """Evaluation mode while inside (batch norm's running statistics, no dropout, no gradients)."""

    def eval_sums(self, batch: Any) -> tuple[Any, Any]:
        """(the batch's summed loss, its count of correct predictions; 0 without an accuracy
        metric) as float device values, not synchronised."""


class FrameworkAdapter(Protocol):
    """Module-level API of rigbench/frameworks/<name>/__init__.py. Whether the framework is
    installed is the registry's answer (frameworks/__init__.is_installed), not the adapter's."""

    NAME: str

    def environment(self, spec: TrialSpec) -> dict[str, str]:
        """Environment variables the trial's child sets before the framework is imported
        (thread counts, allocator settings); computed without importing the framework."""

    def prepare(self, threads: int | None) -> None:
        """Size the framework's CPU thread pools to `threads` (None: its default). The child
        calls it once, right after applying `environment` and before anything can start the
        framework's runtime (counting, building, calibrating)."""

    def software(self) -> dict[str, Any]:
        """Versions that decide comparability; holds at least SOFTWARE_KEYS."""

    def list_devices(self) -> list[DeviceInfo]:
        """Devices this framework can use here, the CPU first."""

    def build(self, spec: TrialSpec, workload: Workload) -> DataTrainer:
        """Build the model, optimiser(s) and a resident synthetic batch on `spec.device`.

        Raises UnsupportedError for combinations that cannot run (e.g. a precision the
        device lacks) and UsageError for a bad device. The same trainer serves the speed
        protocol (synthetic batch) and the shared training and lr-find loops (real data).
        """

    def is_oom(self, exc: BaseException) -> bool:
        """True if `exc` is this framework's out-of-memory error (or the CPU allocator's)."""

    def count(self, workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
        """(trainable parameters, training FLOPs per sample by the adapter's own counter),
        counted without real memory. The parameters are the figure of record; the FLOPs
        cross-check the workload's analytic figure (workloads.flops.train_flops_per_sample)."""

    def attention(self, spec: TrialSpec, workload: Workload) -> str | None:
        """The attention kernel a transformer workload's step runs on the trial's device and
        precision (e.g. "torch sdpa: flash"), None for a workload without attention; stored as
        software key "attention". Optional: no key for adapters without it."""

    def compilation(self, spec: TrialSpec) -> str | None:
        """What the graph compiler did in this process once a compiled trial's steps have run
        (e.g. "torch.compile reduce-overhead: 1 graph, 0 graph breaks; CUDA graphs: 2 recorded"),
        None for an eager trial; stored as software key "compile". Optional."""

    def count_traffic(self, workload: Workload, options: dict[str, Any], precision: str = "fp32") -> tuple[float, float]:
        """Estimated (bytes per step, bytes per sample) that a step's forward and backward
        passes read and write in device memory at the trial's `precision` (the element sizes
        it moves: 2 bytes where bf16/fp16 autocast casts): traffic(batch) = per_step +
        per_sample * batch. Optional: the runner leaves `bytes_per_sample` empty for adapters
        without it. An adapter with it also defines `TRAFFIC_REVISION`, an int stored with
        each trial's estimate (Metrics.bytes_estimate_revision), raised when the count changes."""

    def calibration_kernels(self, device: str) -> CalibrationKernels:
        """The kernels of `device` (a matmul, a copy, a device clock, host copies) that
        frameworks/driver/calibration.calibrate measures the ceilings with (`rigbench
        calibrate`); UsageError for a device the framework does not have."""


#: Module-level names every adapter must define. Optional: `count_traffic`, `attention`, `compilation`; `PRELOAD`, the
#: modules a warm-start server imports once so each trial's process is forked with them loaded
#: (runner/launchers/warm_start.py; only modules whose import starts no thread: the server
#: checks), and that a cold trial imports at the same point (`modules_to_preload`);
#: `NO_DATA_PARALLEL`, why an adapter without `join` cannot train data-parallel.
REQUIRED = ("NAME", "environment", "prepare", "software", "list_devices", "build", "is_oom", "count",
            "calibration_kernels")


def modules_to_preload(adapter: object) -> tuple[str, ...]:
    """The modules every trial of `adapter` holds before its model is counted and its memory
    cap set: a warm trial's server imported them, a cold trial imports them then. So a warm
    and a cold trial start the cap from the same baseline."""
    return tuple(getattr(adapter, "PRELOAD", ()))


def no_data_parallel_reason(adapter: object) -> str:
    """Why `adapter` (one without `join`) cannot train data-parallel: its NO_DATA_PARALLEL."""
    return str(getattr(adapter, "NO_DATA_PARALLEL", "its adapter cannot join a process group"))


def missing_members(adapter: object) -> list[str]:
    """The REQUIRED names an adapter module lacks (empty when it conforms)."""
    return [name for name in REQUIRED if not hasattr(adapter, name)]


# --- data parallel (runner/rank.py drives these; docs/ARCHITECTURE.md "Data parallel") ------

class Collective(Protocol):
    """A rank's membership of its trial's process group, made by the framework's own engine."""

    def agree(self, steps: int) -> int:
        """The largest of every rank's `steps` (an all-reduce MAX): the ranks run the agreed
        number, so none waits forever in a gradient all-reduce (runner/protocol.py)."""

    def leave(self, failed: bool) -> None:
        """Leave the group (after the last collective). `failed`: this rank's trial failed, so
        its peers may be blocked waiting for it; leave without waiting for them."""

    def time_all_reduce(self, nbytes: int, repeats: int) -> list[float]:
        """Seconds of each of `repeats` all-reduces (sum) of an fp32 buffer of `nbytes` on the
        rank's device, after one untimed, each ended by a device sync (the nccl-tests method;
        runner/rank.py turns them into bus bandwidth)."""

    def lost_peer(self, exc: BaseException) -> bool:
        """Whether `exc` says another rank went away (its connection closed inside a
        collective): this rank's failure is then collateral, and the trial's cause is elsewhere."""


class ReportChannel(Protocol):
    """Optional on a Collective: a key-value channel between the nodes of a multi-node trial
    (torch: the rendezvous store), by which each rank's report reaches node 0, which stores
    the trial. Not a collective: a rank that died simply never sends."""

    def send(self, key: str, text: str) -> None:
        """Publish `text` under `key` for the other nodes."""

    def receive(self, keys: list[str], timeout_s: float) -> dict[str, str]:
        """The texts published under `keys` within `timeout_s` in all (those that came)."""


class DataParallelTrainer(DataTrainer, Protocol):
    """A trainer built inside a joined group: its model is replicated with gradients averaged
    over the ranks, and its synthetic batch is the rank's share of the global one (rows
    rank::world_size of batch_size x world_size rows drawn from the seed), so that one process
    trained on the global batch computes the same update."""

    def without_gradient_sync(self) -> AbstractContextManager[Any]:
        """Steps inside skip the gradient all-reduce (DDP's no_sync): the communication share
        is the difference. The replicas drift apart inside it: only for timing, after the
        parameters were fingerprinted."""

    def parameter_fingerprint(self) -> tuple[str, list[float]]:
        """(sha256 of every parameter's bytes in order, each parameter tensor's sum): equal
        digests mean identical replicas; the sums compare runs within a tolerance."""


class DataParallelAdapter(FrameworkAdapter, Protocol):
    """An adapter that trains data-parallel. Optional: a trial with world_size > 1 on an
    adapter without `join` is `unsupported`."""

    def join(self, spec: TrialSpec, rank: RankInfo) -> Collective:
        """Join the trial's process group as `rank` (called once, after `prepare`, before
        `build`); `build` then returns a DataParallelTrainer."""

    def data_parallel_refusal(self, spec: TrialSpec) -> str | None:
        """Why this adapter cannot run `spec` over processes (e.g. keras-jax's real-data
        training), or None. Optional: runner/launchers.launcher_for asks before any process
        starts, and the trial is `unsupported` with this reason."""
