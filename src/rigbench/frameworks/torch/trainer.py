"""TorchTrainer: one workload, built on one device, with a resident synthetic batch.

Implements rigbench.frameworks.base.DataTrainer: the speed protocol steps its synthetic batch,
the shared training and lr-find loops (frameworks/driver/) drive its real-data primitives. The
step itself is `step.training_step`; this module adds the device, precision, optimiser,
timing and memory plumbing.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import partial
from typing import Any, cast

import numpy as np
import torch
from torch import Tensor
from torch.nn.parallel import DistributedDataParallel

from rigbench.compile_modes import CUDA_GRAPH_MODES
from rigbench.errors import UnsupportedError, UsageError
from rigbench.frameworks.host_timer import HostTimer
from rigbench.frameworks.torch import models, parallel, step
from rigbench.frameworks.torch.loader import TorchLoader
from rigbench.hw.cpu import cpu_name
from rigbench.ranks import RankInfo
from rigbench.spec import TrainOptions, TrialSpec
from rigbench.workloads import Workload, resolved_options

_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


# --------------------------------------------------------------------------- devices


def resolve_device(device: str) -> torch.device:
    """The torch.device for a rigbench device id ("cpu", "cuda:0", "mps", "xpu:0", "dml:0").

    Only the syntax is checked here; whether the device exists is the adapter's check.
    DirectML devices are torch "privateuseone" devices handed out by torch_directml.
    """
    kind, _, index = device.partition(":")
    if kind == "dml":
        import torch_directml  # optional; only present on Windows DirectML installs

        return torch_directml.device(int(index or 0))
    try:
        return torch.device(device)
    except RuntimeError as exc:
        raise UsageError(f"invalid device {device!r}: {exc}") from None


def device_name(device: torch.device) -> str:
    """Human name of the device, e.g. "NVIDIA H100 80GB HBM3"."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "xpu":
        return torch.xpu.get_device_name(device)
    if device.type == "mps":
        return f"Apple GPU (MPS), {cpu_name()}"
    if device.type == "privateuseone":
        import torch_directml

        return torch_directml.device_name(device.index or 0)
    return cpu_name()


def synchronize(device: torch.device) -> None:
    """Block until the device's queued work is done (nothing to do on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()
    elif device.type == "xpu":
        torch.xpu.synchronize(device)
    elif device.type == "privateuseone":
        # DirectML has no synchronize API; its queue is in order, so a blocking copy of
        # a fresh tensor back to the host waits for everything queued before it.
        torch.zeros(1, device=device).cpu()


# --------------------------------------------------------------------------- timers


class CudaEventTimer:
    """Steps bracketed by CUDA events on the current stream: no host sync until elapsed_s().

    elapsed_s() must only be called after the trainer's synchronize(), when every
    recorded event has completed.
    """

    def __init__(self, device: torch.device):
        self._stream = torch.cuda.current_stream(device)
        self._pairs: list[tuple[Any, Any]] = []
        self._start: Any = None

    def start(self) -> None:
        self._start = torch.cuda.Event(enable_timing=True)
        self._start.record(self._stream)

    def stop(self) -> None:
        end = torch.cuda.Event(enable_timing=True)
        end.record(self._stream)
        self._pairs.append((self._start, end))

    def elapsed_s(self) -> list[float]:
        return [start.elapsed_time(end) / 1000.0 for start, end in self._pairs]  # ms -> s


# --------------------------------------------------------------------------- trainer


def _backward_only(loss: Tensor, part: str) -> None:
    loss.backward()


#: Workload.optimizer -> torch optimiser; its other arguments are the workload's optimizer_args.
OPTIMIZERS: dict[str, Callable[..., torch.optim.Optimizer]] = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}


def _make_optimizer(workload: Workload, params: Any, lr: float) -> torch.optim.Optimizer:
    """The workload's optimiser with its declared arguments (e.g. SGD momentum 0.9, the
    DCGAN's Adam betas (0.5, 0.999))."""
    return OPTIMIZERS[workload.optimizer](params, lr=lr, **workload.optimizer_args)


def _set_tf32(device: torch.device, precision: str) -> None:
    """TensorFloat-32 matrix maths for `tf32`, strict fp32 otherwise (torch's default for
    matmuls; cuDNN convolutions default to TF32, so fp32 turns that off to mean fp32).

    TF32 exists on NVIDIA GPUs of compute capability 8.0 (Ampere) and later; elsewhere the
    trial is `unsupported` rather than silently fp32.
    """
    if device.type == "cuda" and not torch.version.hip:
        tf32 = precision == "tf32"
        if tf32 and torch.cuda.get_device_capability(device)[0] < 8:
            raise UnsupportedError(f"tf32 needs an NVIDIA GPU of compute capability 8.0 or later; "
                                   f"{torch.cuda.get_device_name(device)} is "
                                   f"{'.'.join(map(str, torch.cuda.get_device_capability(device)))}")
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
    elif precision == "tf32":
        raise UnsupportedError(f"tf32 is an NVIDIA GPU format (Ampere and later); not on {device.type}")


def _autocast_factory(device: torch.device, precision: str) -> Any:
    """A zero-argument autocast context factory for `precision`; UnsupportedError if unusable.

    For a dtype it cannot do, autocast either raises or (CPU, CUDA, MPS) only warns
    "Disabling autocast" and runs in fp32, so the probe also checks that it stayed enabled.
    """
    if precision in ("fp32", "tf32"):
        return nullcontext
    factory = partial(torch.autocast, device_type=device.type, dtype=_DTYPES[precision])
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with factory():
                enabled = torch.is_autocast_enabled(device.type)
    except (RuntimeError, ValueError) as exc:
        raise UnsupportedError(f"{precision} autocast is not supported on {device.type}: {exc}") from None
    if not enabled:
        why = "; ".join(str(w.message) for w in caught) or "autocast disabled itself"
        raise UnsupportedError(f"{precision} autocast is not supported on {device.type}: {why}")
    return factory


class TorchTrainer:
    """A workload's model, optimiser(s) and resident batch on one device (base.Trainer)."""

    def __init__(self, spec: TrialSpec, workload: Workload):
        # Inside a process group (frameworks/torch/parallel.py) each rank has its device.
        rank, world = parallel.world()
        self.device = resolve_device(parallel.rank_device(spec.device, RankInfo.from_env()) if parallel.joined()
                                     else spec.device)
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)  # events, autocast and allocator stats use it
        self.workload = workload
        _set_tf32(self.device, spec.precision)
        self._autocast = _autocast_factory(self.device, spec.precision)
        self.memory_format = torch.channels_last if spec.channels_last else torch.contiguous_format
        torch.manual_seed(spec.seed)
        # Built and drawn on the CPU, then moved: the same seed gives the same weights and
        # batch on every device, so losses are comparable across devices.
        self.model = models.build_model(workload.name, resolved_options(workload, spec.workload_options))
        if spec.channels_last and not any(isinstance(m, torch.nn.Conv2d) for m in self.model.modules()):
            raise UnsupportedError(f"channels-last applies to convolutional workloads; {workload.name} has no 2-D convolution")
        # Module.to accepts memory_format at run time (it converts 4-D parameters), but torch's
        # stubs list no such overload.
        self.model.to(self.device, memory_format=self.memory_format).train()  # type: ignore[call-overload]
        # The rank's share of the global batch (rows rank::world, as data/shard.py deals a
        # data set): one process on the global batch computes the same update.
        drawn = step.synthetic_batch(workload, spec.batch_size * world)
        self.batch = tuple(self.to_device(t[rank::world].contiguous()) for t in drawn)  # a copy, not a strided view
        self.replicas = self._replicate() if parallel.joined() else []
        self.optimizers = self._optimizers(workload.default_lr if spec.lr is None else spec.lr)
        # Loss scaling keeps fp16 gradients from underflowing; only CUDA's scaler is used
        # (CPU fp16 autocast runs without one). Note GradScaler.step() reads its inf check
        # back to the host, so an fp16 CUDA step does synchronise once.
        use_scaler = spec.precision == "fp16" and self.device.type == "cuda"
        self.scalers = {part: torch.amp.GradScaler("cuda") for part in self.optimizers} if use_scaler else {}
        self.params = models.trainable_params(self.model)
        self.device_name = device_name(self.device)
        if spec.precision not in ("fp32", "tf32"):
            self._probe_precision(spec.precision)
        self._marks_steps = spec.compile in CUDA_GRAPH_MODES  # see _begin_step
        if spec.compiled:  # after the probe, so compilation sees only the real batch shape
            self._compile(spec.compile)

    def to_device(self, tensor: Tensor, non_blocking: bool = False) -> Tensor:
        """Move a tensor to the trial's device, NHWC for 4-D images under channels-last."""
        tensor = tensor.to(self.device, non_blocking=non_blocking)
        if tensor.dim() == 4 and self.memory_format is torch.channels_last:
            tensor = tensor.contiguous(memory_format=torch.channels_last)
        return tensor

    def _replicate(self) -> list[DistributedDataParallel]:
        """Each optimised part as a DDP replica (a GAN's D and G separately), before the
        optimisers are made: they then hold the replicas' (the same) parameters."""
        if len(self.workload.parts) == 1:
            replica = parallel.replicate(self.model, self.device)
            self.model = replica
            return [replica]
        parts = cast(torch.nn.ModuleDict, self.model)
        for part in self.workload.parts:
            parts[part.name] = parallel.replicate(parts[part.name], self.device)
        return [cast(DistributedDataParallel, parts[part.name]) for part in self.workload.parts]

    def without_gradient_sync(self) -> AbstractContextManager[Any]:
        """Steps without the gradient all-reduce (base.DataParallelTrainer); nothing to skip
        in one process."""
        return parallel.no_sync(self.replicas)

    def parameter_fingerprint(self) -> tuple[str, list[float]]:
        return parallel.fingerprint(self.model)

    def _compile(self, mode: str) -> None:
        """torch.compile each optimised part (D and G separately for a GAN) in `mode`. The
        compiled wrappers share the parameters, so the optimisers built earlier still update
        them. Compilation happens in the first steps, which the protocol's warm-up excludes and
        `first_step_s` reports. (`Module.compile()` in place did not compile in torch 2.13.)"""
        if len(self.workload.parts) == 1:
            self.model = cast(torch.nn.Module, torch.compile(self.model, mode=mode))  # an OptimizedModule
            return
        parts = cast(torch.nn.ModuleDict, self.model)
        for part in self.workload.parts:
            parts[part.name] = cast(torch.nn.Module, torch.compile(parts[part.name], mode=mode))

    def _probe_precision(self, precision: str) -> None:
        """Forward and backward once, on one sample, under autocast, without an update.

        Entering autocast can succeed while a kernel still lacks the reduced-precision
        variant on this device (e.g. oneDNN's LSTM in bf16/fp16 on CPUs without AVX-512:
        "could not create a primitive descriptor"); that is `unsupported`, not a crash.
        Only batch-norm running statistics move, which train-mode steps do not read.
        """
        from rigbench.frameworks.torch.oom import is_oom

        one = tuple(t[:1] for t in self.batch)
        try:
            step.training_step(self.workload, self.model, one, _backward_only, self._autocast)
        except (RuntimeError, NotImplementedError) as exc:
            if is_oom(exc):
                raise
            raise UnsupportedError(f"{precision} {self.workload.name} fails on {self.device.type}: {exc}") from exc
        finally:
            for optimizer in self.optimizers.values():
                optimizer.zero_grad(set_to_none=True)

    def _optimizers(self, lr: float) -> dict[str, torch.optim.Optimizer]:
        """One optimiser per separately updated part (D and G for a GAN)."""
        parts = step.parts(self.workload, self.model)
        return {part: _make_optimizer(self.workload, module.parameters(), lr) for part, module in parts.items()}

    def update_part(self, loss: Tensor, part: str) -> None:
        """Backward pass of `loss` and the optimiser step of `part` (through the fp16 loss scaler)."""
        optimizer, scaler = self.optimizers[part], self.scalers.get(part)
        if scaler is None:
            loss.backward()
            optimizer.step()
            return
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    def _begin_step(self) -> None:
        """CUDA-graph modes: a new step begins (a replay overwrites the last one's outputs from here)."""
        if self._marks_steps:
            torch.compiler.cudagraph_mark_step_begin()

    def _step(self, batch: tuple[Tensor, ...], update: step.Update) -> Tensor:
        self._begin_step()
        for optimizer in self.optimizers.values():
            optimizer.zero_grad(set_to_none=True)
        return step.training_step(self.workload, self.model, batch, update, self._autocast)

    def step(self) -> Tensor:
        """One training step on the synthetic batch; returns the detached loss without a device sync."""
        return self._step(self.batch, self.update_part)

    def synchronize(self) -> None:
        synchronize(self.device)

    def step_timer(self) -> CudaEventTimer | HostTimer:
        if self.device.type == "cuda":
            return CudaEventTimer(self.device)
        return HostTimer(None if self.device.type == "cpu" else self.synchronize)

    def loss_values(self, handles: list[Any]) -> list[float]:
        if not handles:
            return []
        return torch.stack(handles).float().cpu().tolist()  # one device-to-host copy

    def allocator_peak_bytes(self) -> int | None:
        """Peak allocator bytes since the last reset (CUDA graphs: the reserved peak, which holds
        their private pool: allocated read 3 MiB against eager's 163 on an H200's cnn); on MPS the
        driver's current total, on CPU and DirectML None (no allocator statistics)."""
        kind = self.device.type
        if kind == "cuda":
            peak = torch.cuda.max_memory_reserved if self._marks_steps else torch.cuda.max_memory_allocated
            return int(peak(self.device))
        if kind == "xpu":
            return int(torch.xpu.max_memory_allocated(self.device))
        if kind == "mps":
            return int(torch.mps.driver_allocated_memory())
        return None

    def reset_peak_memory(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        elif self.device.type == "xpu":
            torch.xpu.reset_peak_memory_stats(self.device)

    # ------------------------------------------------------------------ real data (base.DataTrainer)

    def drop_synthetic_batch(self) -> None:
        self.batch = ()

    def put_data(self, x: np.ndarray, y: np.ndarray) -> tuple[Tensor, Tensor]:
        """Copy the uint8 arrays (4x smaller than floats), then scale on the device."""
        return step.scale(self.workload, torch.from_numpy(x).to(self.device)), torch.from_numpy(y).to(self.device)

    def put_index(self, order: np.ndarray) -> Tensor:
        return torch.from_numpy(order).to(self.device)

    def take(self, data: tuple[Tensor, Tensor], index: Tensor, start: int, stop: int) -> tuple[Tensor, Tensor]:
        idx = index[start:stop]
        return data[0][idx], data[1][idx]

    def host_loader(self, x: np.ndarray, y: np.ndarray, options: TrainOptions) -> TorchLoader:
        # Pinned memory only helps (and only works) for copies to a CUDA device.
        return TorchLoader(x, y, options, pin=options.pin_memory and self.device.type == "cuda")

    def put_batch(self, images: Any, labels: Any) -> tuple[Tensor, Tensor]:
        images, labels = torch.as_tensor(images), torch.as_tensor(labels)
        pinned = images.is_pinned()  # the loader's pinned batches may copy asynchronously
        x = step.scale(self.workload, images.to(self.device, non_blocking=pinned))
        y = labels.to(self.device, non_blocking=pinned)
        synchronize(self.device)  # the copy (asynchronous when pinned) and the scaling are really done
        return x, y

    def train_step(self, batch: tuple[Tensor, Tensor]) -> tuple[Tensor, dict[str, Tensor]]:
        parts: dict[str, Tensor] = {}

        def update(loss: Tensor, part: str) -> None:
            if len(self.optimizers) > 1:
                parts[part] = loss.detach()  # a GAN reports D and G losses separately
            self.update_part(loss, part)

        return self._step(step.model_batch(self.workload, *batch), update), parts

    def set_lr(self, lr: float) -> None:
        for optimizer in self.optimizers.values():
            for group in optimizer.param_groups:
                group["lr"] = lr

    @contextmanager
    def evaluation(self) -> Iterator[None]:
        """Batch norm uses its running statistics, dropout is off, no gradients."""
        self.model.eval()
        try:
            with torch.no_grad():
                yield
        finally:
            self.model.train()

    def eval_sums(self, batch: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
        workload = self.workload
        inputs, targets = step.model_batch(workload, *batch)
        self._begin_step()
        with self._autocast():
            out = self.model(inputs)
            loss = step.output_loss(workload, out, targets)
        total = loss.float() * len(inputs)  # batch mean -> a sum over the batch
        if workload.metric != "accuracy":
            return total, torch.zeros((), device=self.device)
        predicted = step.PREDICTIONS[workload.loss](out)
        return total, (predicted == targets.to(predicted.dtype)).sum().float()
