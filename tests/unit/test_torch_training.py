"""Training on real data: the shared loop (frameworks/driver/training.py) driving the torch
adapter's trainer on the `digits` set that ships with scikit-learn, on the CPU (torch is the
fastest framework to start; tests/unit/test_jax_adapter.py and the Keras-family contract run the
same loop on the other frameworks).

Accuracies are asserted, never times: only that each timed part was measured at all.
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")

from rigbench.data import LoadedData, load_for_workload, training_options  # noqa: E402
from rigbench.errors import UnsupportedError  # noqa: E402
from rigbench.frameworks import torch as adapter  # noqa: E402
from rigbench.frameworks.driver import training  # noqa: E402
from rigbench.frameworks.run_records import TrainingDiverged, TrainRun  # noqa: E402
from rigbench.spec import TrainOptions, TrialSpec  # noqa: E402
from rigbench.workloads import WORKLOADS, shaped  # noqa: E402

DIGITS_TRAIN = 1438  # after the data layer's stratified 80/20 split
DIGITS_TEST = 359


def _spec(workload: str, epochs: int, batch_size: int = 32, lr: float | None = None, **train) -> TrialSpec:
    return TrialSpec(workload=workload, device="cpu", batch_size=batch_size, threads=2, lr=lr,
                     train=TrainOptions(dataset="digits", epochs=epochs, **train))


def _train(spec: TrialSpec, on_epoch=None, build=adapter.build) -> TrainRun:
    data = load_for_workload(spec.workload, "digits")
    return training.train(build, spec, WORKLOADS[spec.workload], data, on_epoch)


@pytest.mark.parametrize(("workload", "lr", "epochs"), [
    ("mlp", 0.02, 3),   # seeds 0-3: best 0.94-0.96 by epoch 3
    ("cnn", None, 6),   # default lr 0.01; seeds 0-3: best 0.94-0.95 by epoch 4-6
])
def test_classifier_learns_digits(workload, lr, epochs):
    seen = []
    run = _train(_spec(workload, epochs, lr=lr), on_epoch=seen.append)
    assert seen == run.epochs and [r.epoch for r in run.epochs] == list(range(1, epochs + 1))
    assert max(r.accuracy for r in run.epochs) >= 0.90
    steps = DIGITS_TRAIN // 32  # the last partial batch is dropped
    assert len(run.loss_curve) == epochs * steps
    assert run.train_samples == DIGITS_TRAIN and run.test_samples == DIGITS_TEST and run.params > 0
    for r in run.epochs:
        assert r.steps == steps and r.train_seconds > 0 and r.eval_seconds > 0
        assert r.input_seconds == r.copy_seconds == 0  # resident mode
        assert math.isfinite(r.eval_loss) and r.extra == {}


@pytest.fixture
def no_fork_after_jax():
    """A pytest worker may have imported JAX (the contract and JAX tests share the processes),
    and forking a process with JAX's threads can deadlock the child: loader workers then start
    by spawn. A trial's own child imports one framework only and keeps the default."""
    if "jax" not in sys.modules:
        yield
        return
    before = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method("spawn", force=True)
    try:
        yield
    finally:
        multiprocessing.set_start_method(before, force=True)


@pytest.mark.parametrize(("workers", "pin_memory"), [(0, True), (1, False)])  # pinning is ignored on cpu
def test_loader_mode_times_input_and_copy(workers, pin_memory, no_fork_after_jax):
    spec = _spec("cnn", 1, max_train_samples=500, input_mode="loader", workers=workers, pin_memory=pin_memory)
    (record,) = _train(spec).epochs
    assert record.steps == 500 // 32  # same count as resident mode
    assert record.input_seconds > 0 and record.copy_seconds >= 0
    assert record.train_seconds >= record.input_seconds + record.copy_seconds
    assert 0 <= record.accuracy <= 1


@pytest.mark.timeout(120)  # without the fix: a worker that cannot hand over a batch, and a loader that waits for ever
def test_loader_workers_train_under_a_long_temporary_directory(tmp_path, monkeypatch, no_fork_after_jax):
    """A worker hands each batch over a Unix socket under the temporary directory; past 107
    characters its bind failed ("AF_UNIX path too long") and `train --workers N` hung."""
    import tempfile

    long = tmp_path / ("t" * (120 - len(str(tmp_path))))
    long.mkdir()
    monkeypatch.setenv("TMPDIR", str(long))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    (record,) = _train(_spec("mlp", 1, max_train_samples=128, input_mode="loader", workers=1)).epochs
    assert record.steps == 128 // 32 and 0 <= record.accuracy <= 1


def test_same_seed_same_run():
    first = _train(_spec("cnn", 1, max_train_samples=256))
    again = _train(_spec("cnn", 1, max_train_samples=256))
    assert first.loss_curve == again.loss_curve
    assert first.epochs[0].accuracy == again.epochs[0].accuracy


def test_huge_lr_diverges_in_epoch_one():
    with pytest.raises(TrainingDiverged) as info:
        _train(_spec("mlp", 3, lr=1e6, max_train_samples=320))
    exc = info.value
    assert exc.step == 1 and exc.epochs == [] and "epoch 1" in str(exc)
    assert all(math.isfinite(v) for v in exc.loss_curve) and len(exc.loss_curve) < 320 // 32


def test_divergence_later_carries_finished_epochs():
    """A real blow-up in epoch 2: the lr is raised to 1e6 once epoch 1 is done."""
    trainers = []

    def recorded(spec, workload):
        trainers.append(adapter.build(spec, workload))
        return trainers[-1]

    def raise_lr(record):
        trainers[0].set_lr(1e6)

    with pytest.raises(TrainingDiverged) as info:
        _train(_spec("mlp", 3, lr=0.02, max_train_samples=320), on_epoch=raise_lr, build=recorded)
    exc = info.value
    assert exc.step == 2 and [r.epoch for r in exc.epochs] == [1]
    assert len(exc.loss_curve) >= 10 and all(math.isfinite(v) for v in exc.loss_curve)


def test_autoencoder_reconstruction_improves():
    run = _train(_spec("autoencoder", 3))
    assert all(r.accuracy is None for r in run.epochs)
    mse = [r.extra["recon_mse"] for r in run.epochs]
    assert mse[2] < mse[0]
    assert run.epochs[-1].eval_loss == pytest.approx(mse[-1])


def test_dcgan_reports_both_losses():
    data = load_for_workload("dcgan", "digits")
    assert data.x_train.shape[1:] == (3, 64, 64)
    (record,) = training.train(adapter.build, _spec("dcgan", 1, batch_size=16, max_train_samples=64), WORKLOADS["dcgan"],
                                 data).epochs
    assert record.steps == 4 and record.accuracy is None and record.eval_loss is None
    assert set(record.extra) == {"loss_d", "loss_g"} and all(map(math.isfinite, record.extra.values()))
    assert record.train_loss == pytest.approx(record.extra["loss_d"] + record.extra["loss_g"], rel=1e-4)


def test_catsdogs_binary_labels():
    """One logit, float 0/1 targets, accuracy from logit > 0 (tiny random images: shapes only)."""
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (6, 3, 256, 256), dtype=np.uint8)
    labels = np.array([0, 1, 0, 1, 0, 1], dtype=np.int64)
    data = LoadedData("fake", ("cat", "dog"), images[:4], labels[:4], images[4:], labels[4:])
    spec = TrialSpec(workload="catsdogs", device="cpu", batch_size=2, threads=2,
                     train=TrainOptions(dataset="image_folder", epochs=1))
    (record,) = training.train(adapter.build, spec, WORKLOADS["catsdogs"], data).epochs
    assert record.steps == 2 and record.accuracy in (0.0, 0.5, 1.0)


def test_vit_has_no_data_set():
    data = load_for_workload("mlp", "digits")
    with pytest.raises(UnsupportedError):
        training.train(adapter.build, _spec("vit", 1), WORKLOADS["vit"], data)


def held_out_slice(data: LoadedData, windows: int = 256) -> LoadedData:
    """`data` with its first `windows` validation windows only: evaluating all 1,834 of pysrc's
    (32 bytes each) took longer than the training steps themselves."""
    return dataclasses.replace(data, x_test=data.x_test[:windows], y_test=data.y_test[:windows])


def test_the_byte_lstm_learns_text():
    """lstm on pysrc is lstm:vocab=256: token ids in, next bytes as targets, a held-out loss per
    epoch; 8 steps at its default lr (SGD 1.0, momentum 0.9) take it from ln(256) = 5.55 to
    3.58-3.66 (seeds 0-2 on the dev VM, over all validation windows; 4 steps were too few:
    4.45-5.56). The test evaluates the first 256 windows."""
    options = training_options("lstm", {}, "pysrc")
    spec = TrialSpec(workload="lstm", workload_options=options, device="cpu", batch_size=32, threads=2,
                     train=TrainOptions(dataset="pysrc", epochs=1, max_train_samples=256))
    data = held_out_slice(load_for_workload("lstm", "pysrc", options=options))
    (record,) = training.train(adapter.build, spec, shaped(WORKLOADS["lstm"], options), data).epochs
    assert record.steps == 8 and record.accuracy is None
    assert record.eval_loss is not None and record.eval_loss < math.log(256) - 1.0
