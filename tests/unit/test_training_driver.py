"""The shared training loop and lr range test (frameworks/driver/) against a numpy trainer
whose every step we script and record: batch order, shards, input modes, divergence, evaluation
and the range test's smoothing, checked against hand numbers. No framework is imported."""

from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np
import pytest

from rigbench.data import LoadedData
from rigbench.errors import DivergedError, UnsupportedError, UsageError
from rigbench.frameworks.driver import lr_range, training
from rigbench.frameworks.driver.batches import EVAL_BATCH, NumpyLoader
from rigbench.frameworks.run_records import TrainingDiverged
from rigbench.spec import LrFindOptions, TrainOptions, TrialSpec
from rigbench.workloads import WORKLOADS

N_TRAIN, N_TEST = 100, 1030  # the test set spans three evaluation batches (512 + 512 + 6)


class NumpyTrainer:
    """base.DataTrainer in numpy. A sample is its own index, so each step records which samples
    it trained on; the loss of step i is `losses(i, lr)`; half of every test batch is 'correct'."""

    params, device_name = 7, "numpy"

    def __init__(self, spec, workload, losses=lambda i, lr: 1.0, parts=()):
        self.workload, self.losses, self.parts = workload, losses, parts
        self.lr = spec.lr or 0.1
        self.seen: list[list[int]] = []
        self.evaluating = False
        self.eval_rows = 0
        self.dropped = False

    def drop_synthetic_batch(self):
        self.dropped = True

    def put_data(self, x, y):
        return x.copy(), y.copy()

    def put_index(self, order):
        return order.copy()

    def take(self, data, index, start, stop):
        return data[0][index[start:stop]], data[1][index[start:stop]]

    def host_loader(self, x, y, options):
        return NumpyLoader(x, y, options, "numpy")

    def put_batch(self, images, labels):
        return np.asarray(images), np.asarray(labels)

    def train_step(self, batch):
        self.seen.append([int(v) for v in batch[0]])
        loss = self.losses(len(self.seen) - 1, self.lr)
        return loss, {part: loss / len(self.parts) for part in self.parts}

    def set_lr(self, lr):
        self.lr = lr

    @contextmanager
    def evaluation(self):
        self.evaluating = True
        yield
        self.evaluating = False

    def eval_sums(self, batch):
        assert self.evaluating
        self.eval_rows += len(batch[0])
        return 0.5 * len(batch[0]), len(batch[0]) // 2

    def synchronize(self):
        pass

    def loss_values(self, handles):
        return [float(h) for h in handles]


def _data() -> LoadedData:
    x = np.arange(N_TRAIN, dtype=np.int64)
    return LoadedData("fake", ("a", "b"), x, x % 2, np.arange(N_TEST, dtype=np.int64), np.zeros(N_TEST, np.int64))


def _spec(epochs=2, batch_size=16, world_size=1, **train) -> TrialSpec:
    return TrialSpec(workload="mlp", device="cpu", batch_size=batch_size, world_size=world_size, seed=3,
                     train=TrainOptions(dataset="digits", epochs=epochs, **train))


def _run(spec, rank=0, **trainer):
    made = []

    def build(s, w):
        made.append(NumpyTrainer(s, w, **trainer))
        return made[0]

    run = training.train(build, spec, WORKLOADS["mlp"], _data(), rank=rank)
    return run, made[0]


@pytest.mark.parametrize("input_mode", ["resident", "loader"])
def test_each_epoch_follows_the_seeds_permutation(input_mode):
    run, trainer = _run(_spec(input_mode=input_mode))
    rng = np.random.default_rng(3)
    steps = N_TRAIN // 16  # 6: the last partial batch is dropped
    for epoch in range(2):
        order = rng.permutation(N_TRAIN)
        assert trainer.seen[epoch * steps:(epoch + 1) * steps] == [list(order[i * 16:(i + 1) * 16])
                                                                     for i in range(steps)]
    assert trainer.dropped and [r.steps for r in run.epochs] == [steps, steps]
    assert len(run.loss_curve) == 2 * steps and run.train_samples == N_TRAIN and run.test_samples == N_TEST


def test_evaluation_covers_the_test_set_once_per_epoch():
    run, trainer = _run(_spec())
    assert trainer.eval_rows == 2 * N_TEST and N_TEST > 2 * EVAL_BATCH
    # eval_sums: loss 0.5 per sample, floor(b / 2) correct per batch of 512, 512, 6
    assert [r.eval_loss for r in run.epochs] == [0.5, 0.5]
    assert run.epochs[0].accuracy == pytest.approx((256 + 256 + 3) / N_TEST)


def test_ranks_take_disjoint_equal_shares():
    spec = _spec(epochs=1, batch_size=8, world_size=2)
    (_, first), (_, second) = _run(spec, rank=0), _run(spec, rank=1)
    assert len(first.seen) == len(second.seen) == (N_TRAIN // 2) // 8
    assert not set(sum(first.seen, [])) & set(sum(second.seen, []))


def test_divergence_keeps_finished_epochs_and_the_finite_run_up():
    losses = lambda i, lr: math.nan if i == 6 + 2 else float(i)  # noqa: E731 - epoch 2, its third step
    with pytest.raises(TrainingDiverged) as info:
        _run(_spec(epochs=3), losses=losses)
    exc = info.value
    assert exc.step == 2 and [r.epoch for r in exc.epochs] == [1]
    assert exc.loss_curve == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0] and "step 3 of 6" in str(exc)


def test_multi_part_workload_reports_each_part():
    spec = TrialSpec(workload="dcgan", device="cpu", batch_size=16, seed=3,
                     train=TrainOptions(dataset="digits", epochs=1))
    run = training.train(lambda s, w: NumpyTrainer(s, w, losses=lambda i, lr: 2.0 * (i + 1),
                                                   parts=("discriminator", "generator")),
                         spec, WORKLOADS["dcgan"], _data())
    (record,) = run.epochs
    assert record.eval_loss is None and record.accuracy is None
    assert record.extra == {"loss_d": pytest.approx(3.5), "loss_g": pytest.approx(3.5)}  # mean of 1..6


def test_bad_input_is_refused_before_building():
    with pytest.raises(UsageError, match="do not fill one batch"):
        training.train(lambda s, w: pytest.fail("built"), _spec(batch_size=200), WORKLOADS["mlp"], _data())
    with pytest.raises(UnsupportedError, match="no training data set"):
        training.train(lambda s, w: pytest.fail("built"), _spec().model_copy(update={"workload": "vit"}),
                       WORKLOADS["vit"], _data())
    with pytest.raises(UnsupportedError, match="--workers"):
        _run(_spec(input_mode="loader", workers=2))


def _lr_spec(steps=10, **opts) -> TrialSpec:
    return TrialSpec(workload="mlp", device="cpu", batch_size=16, seed=3,
                     lr_find=LrFindOptions(dataset="digits", start_lr=1e-3, end_lr=1e-1, steps=steps, **opts))


def test_lr_find_ramps_smooths_and_reshuffles_each_pass():
    trainers = []

    def build(s, w):
        trainers.append(NumpyTrainer(s, w, losses=lambda i, lr: 1.0))
        return trainers[0]

    run = lr_range.lr_find(build, _lr_spec(steps=10, smoothing=0.5), WORKLOADS["mlp"], _data())
    rates = [lr for lr, _, _ in run.lr_curve]
    assert rates == pytest.approx([1e-3 * 100 ** (i / 9) for i in range(10)])
    # a constant loss smooths to itself exactly (the bias correction undoes the zero start)
    assert [s for _, _, s in run.lr_curve] == pytest.approx([1.0] * 10) and run.stop_reason == "end_lr"
    rng = np.random.default_rng(3)
    first, second = rng.permutation(N_TRAIN), rng.permutation(N_TRAIN)  # 6 steps a pass
    assert trainers[0].seen[5] == list(first[80:96]) and trainers[0].seen[6] == list(second[:16])


def test_lr_find_stops_on_the_smoothed_rise():
    # losses 1, 1, 10: with smoothing 0.5 the smoothed values are 1, 1, (0.5 * 0.75 + 5) / 0.875 = 6.14
    losses = [1.0, 1.0, 10.0, 10.0]
    run = lr_range.lr_find(lambda s, w: NumpyTrainer(s, w, losses=lambda i, lr: losses[i]),
                           _lr_spec(smoothing=0.5, diverge_factor=4.0), WORKLOADS["mlp"], _data())
    assert run.stop_reason == "diverged" and len(run.lr_curve) == 3
    assert run.lr_curve[2][2] == pytest.approx((0.5 * 0.75 + 5.0) / 0.875)


def test_lr_find_non_finite_first_step():
    with pytest.raises(DivergedError):
        lr_range.lr_find(lambda s, w: NumpyTrainer(s, w, losses=lambda i, lr: math.inf), _lr_spec(),
                         WORKLOADS["mlp"], _data())
