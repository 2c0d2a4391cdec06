"""Training on a real data set for `rigbench train`: epochs, held-out evaluation, where the time went.

The model, optimisers, device and precision come from TorchTrainer, and each step is
`step.training_step`, so a training run trains exactly what `rigbench run` times.

Data arrives as uint8 [N, C, H, W] (rigbench.data) and is scaled on the device by the
workload's declared input range: "symmetric" (classifiers and the GAN, whose generator ends
in tanh) sees (x/255 - 0.5) / 0.5 in [-1, 1]; "unit" (the autoencoder) sees x/255 in [0, 1],
the range of its sigmoid output. Targets follow the declared kind: class indices, 0/1 floats,
the input itself, or fresh latent noise z ~ N(0, 1) every step (a GAN).

Two input modes (TrainOptions.input_mode):
  resident  the whole scaled training set is put on the device once, before epoch 1 (not
            counted in any epoch); each epoch indexes batches from a seeded permutation.
  loader    a torch DataLoader over the uint8 CPU arrays, as real pipelines do. Per step,
            `input_seconds` is the host time waiting in next(iterator) and `copy_seconds`
            the host time of the host-to-device copy *plus* the uint8 -> float conversion
            and scaling (on the CPU the "copy" is only that conversion), ended by a device
            sync. A sync also runs just before the copy so that the previous step's
            queued compute is not counted as copy time; the price is that copies never
            overlap compute in this mode, which a tuned production pipeline would allow.
In both modes the last partial batch is dropped, so every step has the same shape and
there are floor(N / batch) steps per epoch.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from rigbench.data import LoadedData
from rigbench.data.accepts import accepted_datasets
from rigbench.errors import UnsupportedError, UsageError
from rigbench.frameworks.run_records import TrainRun, diverged
from rigbench.frameworks.torch import step
from rigbench.frameworks.torch.trainer import TorchTrainer, synchronize
from rigbench.spec import EpochRecord, TrainOptions, TrialSpec
from rigbench.workloads import Workload

#: Evaluation batch size: large for speed, small enough for big images on small devices.
EVAL_BATCH = 512


@dataclass
class _Timing:
    """Host seconds of one epoch's input pipeline (loader mode only)."""

    input_s: float = 0.0
    copy_s: float = 0.0


# --------------------------------------------------------------------------- tensors


def _scale(workload: Workload, images: Tensor) -> Tensor:
    """uint8 images -> float32 in the workload's input range: [0, 1] (unit) or [-1, 1]."""
    x = images.float().div_(255.0)
    if workload.input_range == "unit":
        return x
    return x.sub_(0.5).div_(0.5)


#: targets kind -> (workload, scaled images, labels) -> targets. Latent noise is drawn fresh
#: each step from torch's seeded default generator (TorchTrainer seeds it).
_TARGETS: dict[str, Callable[[Workload, Tensor, Tensor], Tensor]] = {
    "class_index": lambda w, images, labels: labels,
    "binary": lambda w, images, labels: labels.float(),  # binary cross-entropy on one logit
    "input": lambda w, images, labels: images,
    "latent_noise": lambda w, images, labels: step.latent_noise(w, len(images), images.device),
}


def _model_batch(workload: Workload, images: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
    """(inputs, targets) as step.training_step expects them, from scaled images and labels."""
    return images, _TARGETS[workload.targets](workload, images, labels)


def _training_subset(x: np.ndarray, y: np.ndarray, limit: int | None,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The first `limit` samples after a seeded shuffle (a random, reproducible subset), or all."""
    if limit is None or limit >= len(x):
        return x, y
    keep = rng.permutation(len(x))[:limit]
    return x[keep], y[keep]


# --------------------------------------------------------------------------- batches


class ResidentBatches:
    """The whole training set on the device; batches are device-side index selections."""

    def __init__(self, workload: Workload, x: np.ndarray, y: np.ndarray, batch_size: int,
                 device: torch.device, rng: np.random.Generator):
        # Copy the uint8 arrays (4x smaller than floats), then scale on the device.
        self.x = _scale(workload, torch.from_numpy(x).to(device))
        self.y = torch.from_numpy(y).to(device)
        self.batch_size, self.rng, self.device = batch_size, rng, device
        self.steps = len(x) // batch_size  # drop the last partial batch

    def epoch(self, timing: _Timing) -> Iterator[tuple[Tensor, Tensor]]:
        """One epoch's batches; `timing` stays at zero: there is no input pipeline to wait on."""
        order = torch.from_numpy(self.rng.permutation(len(self.x))).to(self.device)
        for i in range(self.steps):
            idx = order[i * self.batch_size:(i + 1) * self.batch_size]
            yield self.x[idx], self.y[idx]

    def close(self) -> None:
        pass


class LoaderBatches:
    """A DataLoader over the uint8 CPU arrays; copies and scales each batch on the device."""

    def __init__(self, workload: Workload, x: np.ndarray, y: np.ndarray, batch_size: int,
                 device: torch.device, options: TrainOptions, seed: int):
        self.workload, self.device = workload, device
        # Pinned memory only helps (and only works) for copies to a CUDA device.
        self.pin = options.pin_memory and device.type == "cuda"
        dataset = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
        self.loader: torch.utils.data.DataLoader | None = torch.utils.data.DataLoader(
            dataset, batch_size=batch_size, shuffle=True, drop_last=True,
            generator=torch.Generator().manual_seed(seed),  # a new, seeded order each epoch
            num_workers=options.workers, pin_memory=self.pin,
            persistent_workers=options.workers > 0,  # start workers once, not every epoch
        )
        self.steps = len(self.loader)

    def epoch(self, timing: _Timing) -> Iterator[tuple[Tensor, Tensor]]:
        """One epoch's batches on the device, adding the waits and copies to `timing`."""
        assert self.loader is not None, "epoch() after close()"
        batches = iter(self.loader)
        while True:
            start = time.perf_counter()
            try:
                images, labels = next(batches)
            except StopIteration:
                return
            ready = time.perf_counter()
            timing.input_s += ready - start
            synchronize(self.device)  # let the previous step finish, so its compute is not timed as copy
            ready = time.perf_counter()
            images = _scale(self.workload, images.to(self.device, non_blocking=self.pin))
            labels = labels.to(self.device, non_blocking=self.pin)
            synchronize(self.device)  # the copy (asynchronous when pinned) and the scaling are really done
            timing.copy_s += time.perf_counter() - ready
            yield images, labels

    def close(self) -> None:
        """Drop the loader, so persistent worker processes shut down now."""
        self.loader = None


# --------------------------------------------------------------------------- one epoch


@dataclass
class _EpochResult:
    losses: list[float]
    part_losses: dict[str, list[float]]  # per optimised part, multi-part workloads only
    seconds: float
    timing: _Timing


def _train_epoch(trainer: TorchTrainer, batches: ResidentBatches | LoaderBatches) -> _EpochResult:
    """One pass over the training batches; losses stay on the device until the end."""
    workload = trainer.workload
    losses: list[Tensor] = []
    part_losses: dict[str, list[Tensor]] = {part: [] for part in trainer.optimizers}

    def update(loss: Tensor, part: str) -> None:
        part_losses[part].append(loss.detach())  # a GAN reports D and G losses separately
        trainer._update(loss, part)

    timing = _Timing()
    start = time.perf_counter()
    for images, labels in batches.epoch(timing):
        for optimizer in trainer.optimizers.values():
            optimizer.zero_grad(set_to_none=True)
        batch = _model_batch(workload, images, labels)
        losses.append(step.training_step(workload, trainer.model, batch, update, trainer._autocast))
    trainer.synchronize()
    seconds = time.perf_counter() - start
    # One device-to-host copy for the epoch: the step losses, then each part's losses.
    rows = [torch.stack(losses)]
    if len(part_losses) > 1:
        rows += [torch.stack(values) for values in part_losses.values()]
    values = torch.stack(rows).float().cpu().tolist()
    parts = dict(zip(part_losses, values[1:]))
    return _EpochResult(values[0], parts, seconds, timing)


# --------------------------------------------------------------------------- evaluation


@torch.no_grad()
def _evaluate(trainer: TorchTrainer, x_test: Tensor, y_test: Tensor) -> tuple[float, float | None]:
    """(mean held-out loss, accuracy or None) over the whole test set, in eval mode."""
    workload, device, model = trainer.workload, trainer.device, trainer.model
    predict = step.PREDICTIONS[workload.loss] if workload.metric == "accuracy" else None
    total_loss = torch.zeros((), device=device)
    correct = torch.zeros((), device=device)
    model.eval()  # batch norm uses its running statistics, dropout is off
    try:
        for i in range(0, len(x_test), EVAL_BATCH):
            images = _scale(workload, x_test[i:i + EVAL_BATCH].to(device))
            inputs, targets = _model_batch(workload, images, y_test[i:i + EVAL_BATCH].to(device))
            with trainer._autocast():
                out = model(inputs)
                loss = step.output_loss(workload, out, targets)
            total_loss += loss.float() * len(inputs)  # batch means -> a per-sample mean
            if predict is not None:
                predicted = predict(out)
                correct += (predicted == targets.to(predicted.dtype)).sum()
        loss_sum, n_correct = torch.stack([total_loss, correct]).cpu().tolist()  # one copy
    finally:
        model.train()
    return loss_sum / len(x_test), (n_correct / len(x_test) if predict is not None else None)


# --------------------------------------------------------------------------- the run


def train(spec: TrialSpec, workload: Workload, data: LoadedData,
          on_epoch: Callable[[EpochRecord], None] | None = None) -> TrainRun:
    """Train `workload` on `data` for spec.train.epochs epochs.

    Evaluates on the whole test set after each epoch and calls `on_epoch(record)`.
    Raises DivergedError (`step` = the epoch; `.epochs` and `.loss_curve` = what finished
    before it) when a training loss is NaN or infinite, UnsupportedError for workloads
    without a data set (lstm), UsageError when the training set is smaller than one batch.
    """
    options = spec.train
    if options is None:
        raise UsageError("not a training trial: spec.train is not set")
    if not accepted_datasets(workload.name):  # the data layer's fact, e.g. no text corpus yet
        raise UnsupportedError(f"workload {workload.name!r} has no training data set yet")
    trainer = TorchTrainer(spec, workload)  # seeds torch; builds model, optimisers, autocast
    trainer.batch = ()  # the synthetic batch was only needed for the precision probe
    rng = np.random.default_rng(spec.seed)
    x_train, y_train = _training_subset(data.x_train, data.y_train, options.max_train_samples, rng)
    if len(x_train) < spec.batch_size:
        raise UsageError(f"{len(x_train)} training samples do not fill one batch of {spec.batch_size}")
    x_test, y_test = torch.from_numpy(data.x_test), torch.from_numpy(data.y_test)

    if options.input_mode == "resident":
        batches: ResidentBatches | LoaderBatches = ResidentBatches(
            workload, x_train, y_train, spec.batch_size, trainer.device, rng)
    else:
        batches = LoaderBatches(workload, x_train, y_train, spec.batch_size, trainer.device,
                                options, spec.seed)
    trainer.synchronize()  # the resident copy happens before epoch 1 and is not timed

    records: list[EpochRecord] = []
    curve: list[float] = []
    started_at = time.time()
    try:
        for epoch in range(1, options.epochs + 1):
            result = _train_epoch(trainer, batches)
            if not all(math.isfinite(v) for v in result.losses):
                raise diverged(epoch, result.losses, records, curve)
            curve.extend(result.losses)
            record = _record(trainer, epoch, result, x_test, y_test)
            records.append(record)
            if on_epoch is not None:
                on_epoch(record)
    finally:
        batches.close()
    return TrainRun(records, curve, trainer.params, trainer.device_name, len(x_train), len(x_test), started_at)


def _record(trainer: TorchTrainer, epoch: int, result: _EpochResult,
            x_test: Tensor, y_test: Tensor) -> EpochRecord:
    """The epoch's EpochRecord, evaluating on the test set unless the workload declares no
    held-out metric (a GAN: then each part's mean training loss, e.g. `loss_d`, `loss_g`)."""
    eval_loss: float | None = None
    accuracy: float | None = None
    extra: dict[str, float] = {}
    start = time.perf_counter()
    workload = trainer.workload
    if workload.metric == "none":
        extra = {f"loss_{part.key}": float(np.mean(result.part_losses[part.name])) for part in workload.parts}
    else:
        eval_loss, accuracy = _evaluate(trainer, x_test, y_test)
        if workload.metric == "reconstruction_mse":
            extra = {"recon_mse": eval_loss}
    eval_seconds = time.perf_counter() - start  # _evaluate's final copy to the host syncs
    return EpochRecord(
        epoch=epoch, steps=len(result.losses), train_loss=float(np.mean(result.losses)),
        eval_loss=eval_loss, accuracy=accuracy, train_seconds=result.seconds,
        eval_seconds=eval_seconds, input_seconds=result.timing.input_s,
        copy_seconds=result.timing.copy_s, extra=extra, ended_at=time.time(),
    )
