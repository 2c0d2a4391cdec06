"""The JAX adapter's own parts: the jaxpr FLOP counter's convolution rule, the environment, and
training / lr-find on the `digits` set on the CPU (accuracies asserted, never times)."""

from __future__ import annotations

import dataclasses
import math

import pytest

pytest.importorskip("flax")
pytest.importorskip("optax")
pytest.importorskip("sklearn")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from rigbench.data import load_for_workload  # noqa: E402
from rigbench.errors import UnsupportedError  # noqa: E402
from rigbench.frameworks import jax as adapter  # noqa: E402
from rigbench.frameworks.driver import lr_range, training  # noqa: E402
from rigbench.frameworks.jax.flops import jaxpr_flops  # noqa: E402
from rigbench.frameworks.run_records import TrainingDiverged  # noqa: E402
from rigbench.spec import LrFindOptions, TrainOptions, TrialSpec  # noqa: E402
from rigbench.workloads import WORKLOADS  # noqa: E402

DIGITS_TRAIN, DIGITS_TEST = 1438, 359
NHWC = ("NHWC", "HWIO", "NHWC")


def _flops(fn, *shapes) -> float:
    args = [jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes]
    return jaxpr_flops(jax.make_jaxpr(fn)(*args).jaxpr)


def _conv(x, w, stride=1, padding="VALID"):
    return jax.lax.conv_general_dilated(x, w, (stride, stride), padding, dimension_numbers=NHWC)


def test_matmul_counts_two_flops_per_multiply_add():
    assert _flops(lambda x, w: x @ w, (2, 3), (3, 4)) == 2 * 2 * 3 * 4


@pytest.mark.parametrize("size,stride,padding,out",
                         [(15, 1, "VALID", 13), (15, 1, "SAME", 15), (16, 2, ((1, 1), (1, 1)), 8)])
def test_conv_backward_counts_twice_the_forward(size, stride, padding, out):
    # Forward: 2 x batch x out^2 x k^2 x c_in x c_out (zero padding included, as torch counts);
    # the input and weight gradients each count the forward again, although XLA's input gradient
    # of a 'valid' or strided convolution runs over a padded, dilated map.
    forward = 2 * 2 * out * out * 9 * 4 * 8

    def loss(x, w):
        return jnp.sum(_conv(x, w, stride, padding))

    assert _flops(lambda x, w: _conv(x, w, stride, padding), (2, size, size, 4), (3, 3, 4, 8)) == forward
    assert _flops(jax.grad(loss, argnums=(0, 1)), (2, size, size, 4), (3, 3, 4, 8)) == 3 * forward


def test_transposed_conv_counts_per_input_position():
    def up(x, w):  # torch's ConvTranspose2d(k=4, stride=2, padding=1): 5x5 -> 10x10
        return jax.lax.conv_transpose(x, w, (2, 2), ((2, 2), (2, 2)), dimension_numbers=NHWC)

    assert _flops(up, (1, 5, 5, 3), (4, 4, 3, 6)) == 2 * 5 * 5 * 16 * 3 * 6
    one = _flops(lambda x, w: jax.lax.conv_transpose(x, w, (1, 1), ((3, 3), (3, 3)), dimension_numbers=NHWC),
                 (1, 1, 1, 3), (4, 4, 3, 6))  # a 1x1 map: 16 taps, not 16 x 16 over the padding
    assert one == 2 * 16 * 3 * 6


def test_environment_never_preallocates_and_sizes_threads():
    env = adapter.environment(TrialSpec(workload="mlp", batch_size=2, framework="jax", threads=1))
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false" and env["OMP_NUM_THREADS"] == "1"
    assert "--xla_cpu_multi_thread_eigen=false" in env["XLA_FLAGS"]
    four = adapter.environment(TrialSpec(workload="mlp", batch_size=2, framework="jax", threads=4))
    assert "XLA_FLAGS" not in four and four["OMP_NUM_THREADS"] == "4"


@pytest.mark.parametrize("users", [None, "XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION"])
def test_environment_lets_the_gpu_pool_grow_past_jaxs_75_percent_unless_the_user_chose(monkeypatch, users):
    """XLA caps its pool at 75% of the GPU even without preallocation; a fraction the user set
    (under either name: jaxlib refuses both at once) is left alone."""
    for name in ("XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION"):
        monkeypatch.delenv(name, raising=False)
    if users:
        monkeypatch.setenv(users, "0.5")
    env = adapter.environment(TrialSpec(workload="mlp", batch_size=2, framework="jax"))
    assert env.get("XLA_PYTHON_CLIENT_MEM_FRACTION") == (None if users else "0.95")
    assert "XLA_CLIENT_MEM_FRACTION" not in env


def _spec(workload: str, epochs: int, batch_size: int = 32, lr: float | None = None, **train) -> TrialSpec:
    return TrialSpec(workload=workload, framework="jax", device="cpu", batch_size=batch_size, lr=lr,
                     train=TrainOptions(dataset="digits", epochs=epochs, **train))


def _train(spec: TrialSpec, on_epoch=None):
    return training.train(adapter.build, spec, WORKLOADS[spec.workload], load_for_workload(spec.workload, "digits"),
                          on_epoch)


def test_mlp_learns_digits():
    seen = []
    # three epochs: 0.83, 0.93, 0.95 held out on the dev VM (a fourth read 0.955)
    run = _train(_spec("mlp", 3, lr=0.02), on_epoch=seen.append)
    assert seen == run.epochs and [r.epoch for r in run.epochs] == [1, 2, 3]
    assert max(r.accuracy for r in run.epochs) >= 0.90
    steps = DIGITS_TRAIN // 32
    assert len(run.loss_curve) == 3 * steps and run.train_samples == DIGITS_TRAIN
    assert run.test_samples == DIGITS_TEST and run.params > 0 and run.started_at > 0
    for r in run.epochs:
        assert r.steps == steps and r.train_seconds > 0 and r.eval_seconds > 0 and r.ended_at
        assert r.input_seconds == r.copy_seconds == 0 and math.isfinite(r.eval_loss)


def test_loader_mode_same_seed_same_run():
    first = _train(_spec("cnn", 1, max_train_samples=256, input_mode="loader"))
    again = _train(_spec("cnn", 1, max_train_samples=256, input_mode="loader"))
    (record,) = first.epochs
    assert record.steps == 256 // 32 and record.input_seconds > 0 and record.copy_seconds > 0
    assert first.loss_curve == again.loss_curve and record.accuracy == again.epochs[0].accuracy


def test_huge_lr_diverges_in_epoch_one():
    with pytest.raises(TrainingDiverged) as info:
        _train(_spec("mlp", 3, lr=1e6, max_train_samples=320))
    assert info.value.step == 1 and info.value.epochs == []


def test_dcgan_reports_both_losses():
    (record,) = _train(_spec("dcgan", 1, batch_size=16, max_train_samples=32)).epochs
    assert record.steps == 2 and record.accuracy is None and set(record.extra) == {"loss_d", "loss_g"}
    assert record.train_loss == pytest.approx(record.extra["loss_d"] + record.extra["loss_g"], rel=1e-4)


def test_vit_has_no_data_set():
    with pytest.raises(UnsupportedError):
        training.train(adapter.build, _spec("vit", 1), WORKLOADS["vit"], load_for_workload("mlp", "digits"))


def test_the_tiny_gpt_learns_text():
    """gpt (tiny: byte-level as declared) on pysrc windows of its context: 8 Adam steps at
    lr 2e-3 take the held-out loss from ln(256) = 5.55 to 3.42-3.49 (seeds 0-2 on the dev VM, over
    all 917 validation windows; the test evaluates the first 256)."""
    spec = TrialSpec(workload="gpt", framework="jax", device="cpu", batch_size=16, lr=2e-3,
                     train=TrainOptions(dataset="pysrc", epochs=1, max_train_samples=128))
    data = load_for_workload("gpt", "pysrc")
    assert data.x_train.shape[1] == 64  # the tiny preset's context
    data = dataclasses.replace(data, x_test=data.x_test[:256], y_test=data.y_test[:256])  # 256 of 917: quicker
    (record,) = training.train(adapter.build, spec, WORKLOADS["gpt"], data).epochs
    assert record.steps == 8 and record.accuracy is None
    assert record.eval_loss is not None and record.eval_loss < math.log(256) - 1.0


def test_lr_find_ramps_and_stops():
    spec = TrialSpec(workload="mlp", framework="jax", device="cpu", batch_size=64,
                     lr_find=LrFindOptions(dataset="digits", steps=60))
    run = lr_range.lr_find(adapter.build, spec, WORKLOADS["mlp"], load_for_workload("mlp", "digits"))
    rates = [lr for lr, _, _ in run.lr_curve]
    assert rates == sorted(rates) and rates[0] == pytest.approx(1e-6)
    assert run.stop_reason in ("end_lr", "diverged") and min(loss for _, loss, _ in run.lr_curve) < 2.0


def test_loader_workers_are_torch_only():
    # JAX reads host batches in the main process: asking for DataLoader workers is refused, not ignored.
    with pytest.raises(UnsupportedError, match="--workers"):
        _train(_spec("mlp", 1, max_train_samples=64, input_mode="loader", workers=2))
