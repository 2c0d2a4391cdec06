"""The torch adapter's networks and trainer, on the CPU (GPU tests skip without CUDA)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from rigbench.errors import UnsupportedError, UsageError  # noqa: E402
from rigbench.frameworks import torch as adapter  # noqa: E402
from rigbench.frameworks.torch import models  # noqa: E402
from rigbench.spec import TrialSpec  # noqa: E402
from rigbench.workloads import WORKLOADS, resolved_options  # noqa: E402


def _trainer(workload: str, batch: int, **spec):
    return adapter.build(TrialSpec(workload=workload, batch_size=batch, **spec), WORKLOADS[workload])


def _params(workload: str, **options) -> int:
    w = WORKLOADS[workload]
    return models.trainable_params(models.build_model(workload, resolved_options(w, options)))


# --------------------------------------------------------------------------- parameter counts


def test_mlp_params_hand_computed():
    assert _params("mlp") == 784 * 2048 + 2048 + 2 * (2048 * 2048 + 2048) + 2048 * 10 + 10


def test_autoencoder_params_hand_computed():
    sizes = [784, 1000, 500, 250, 30]
    pairs = list(zip(sizes, sizes[1:]))
    pairs += [(b, a) for a, b in reversed(pairs)]
    assert _params("autoencoder") == sum(a * b + b for a, b in pairs)  # 2,837,314


def test_cnn_params_match_tf_tutorial():
    assert _params("cnn") == 122_570


def test_resnet_params():
    # Option-A shortcuts have no parameters: convs 268,336 + BN affine 2,736 + fc 650 = 269,722
    # (He et al. Table 6: 0.27M). The often-quoted 272,474 adds the 2,752 parameters of
    # 1x1-conv+BN projection shortcuts (option B) at the two stage transitions.
    assert _params("resnet") == 269_722
    assert _params("resnet", depth=56) == 853_018  # Table 6: 0.85M


def test_rcnn_params_near_paper():
    assert _params("rcnn") == pytest.approx(670_000, rel=0.01)  # Liang & Hu Table 1: RCNN-96 0.67M


def test_catsdogs_shapes_and_params_near_published():
    model = models.build_model("catsdogs", {})
    convs = [m for m in model if isinstance(m, torch.nn.Conv2d)]
    assert len(convs) == 15
    assert sum(isinstance(m, torch.nn.MaxPool2d) for m in model) == 6
    assert sum(isinstance(m, torch.nn.Linear) for m in model) == 3
    shapes = {}
    for i in (0, 5):
        convs[i].register_forward_hook(lambda m, a, out, i=i: shapes.__setitem__(i, tuple(out.shape)))
    with torch.no_grad():
        model.eval()(torch.zeros(1, 3, 256, 256))
    assert shapes == {0: (1, 32, 256, 256), 5: (1, 128, 64, 64)}  # as seed 001 reports
    assert models.trainable_params(model) == 21_436_577
    assert models.trainable_params(model) == pytest.approx(21_455_521, rel=0.001)


# --------------------------------------------------------------------------- training


# (workload, batch, lr override, steps). Default lrs, except the autoencoder's Adam at 1e-3
# on a 4-image batch overshoots once around step 6, so it trains at 3e-4.
TRAIN_CASES = [
    ("mlp", 4, None, 6),
    ("autoencoder", 4, 3e-4, 6),
    ("cnn", 4, None, 6),
    ("rcnn", 4, None, 6),
    ("lstm", 4, None, 6),
    ("resnet", 4, None, 6),
    ("catsdogs", 2, None, 5),  # ~3 s a step on 2 cores
]


@pytest.mark.parametrize("workload,batch,lr,steps", TRAIN_CASES, ids=[c[0] for c in TRAIN_CASES])
def test_loss_falls(workload, batch, lr, steps):
    trainer = _trainer(workload, batch, lr=lr, threads=2)
    handles = [trainer.step() for _ in range(steps)]
    trainer.synchronize()
    losses = trainer.loss_values(handles)
    assert len(losses) == steps and all(math.isfinite(x) for x in losses)
    assert losses[-1] < losses[0], losses
    assert trainer.params == models.trainable_params(trainer.model) > 0


def test_dcgan_each_update_lowers_its_loss():
    # D loss + G loss is not an objective that falls in a GAN (each update raises the other
    # player's loss), so check what a working step must do: every D update lowers the D
    # loss, and every G update lowers the G loss, on the step's own batch.
    trainer = _trainer("dcgan", 4)
    gen, disc = trainer.model["generator"], trainer.model["discriminator"]
    real, noise = trainer.batch
    bce = F.binary_cross_entropy_with_logits

    def current(part: str) -> float:
        with torch.no_grad():
            fake_logits = disc(gen(noise))
            if part == "generator":
                return bce(fake_logits, torch.ones_like(fake_logits)).item()
            real_logits = disc(real)
            return (bce(real_logits, torch.ones_like(real_logits))
                    + bce(fake_logits, torch.zeros_like(fake_logits))).item()

    before_after: list[tuple[str, float, float]] = []
    update = trainer._update

    def checked_update(loss, part):
        before = loss.item()
        update(loss, part)
        before_after.append((part, before, current(part)))

    trainer._update = checked_update
    handles = [trainer.step() for _ in range(5)]
    assert [p for p, _, _ in before_after] == ["discriminator", "generator"] * 5
    assert all(after < before for _, before, after in before_after), before_after
    assert all(math.isfinite(x) for x in trainer.loss_values(handles))
    assert trainer.params == _params("dcgan")


def test_lstm_targets_are_next_tokens():
    inputs, targets = models.synthetic_batch(WORKLOADS["lstm"], 3)
    assert inputs.shape == targets.shape == (3, 32)
    assert torch.equal(inputs[:, 1:], targets[:, :-1])
    assert 0 <= int(inputs.min()) and int(inputs.max()) < models.VOCAB


def test_same_seed_same_losses():
    first, second = (_trainer("cnn", 4, seed=7) for _ in range(2))
    assert first.loss_values([first.step(), first.step()]) == second.loss_values([second.step(), second.step()])


def test_bf16_cpu_step_is_finite():
    trainer = _trainer("cnn", 4, precision="bf16")
    (loss,) = trainer.loss_values([trainer.step()])
    assert math.isfinite(loss)


def test_autocast_that_disables_itself_is_unsupported(monkeypatch):
    from rigbench.frameworks.torch import trainer as trainer_module

    # CPU autocast only warns "Disabling autocast" for a dtype it lacks (here float64).
    monkeypatch.setitem(trainer_module._DTYPES, "bf16", torch.float64)
    with pytest.raises(UnsupportedError, match="bf16"):
        _trainer("mlp", 2, precision="bf16")


def test_reduced_precision_failure_is_unsupported():
    # oneDNN has no bf16 LSTM on CPUs without AVX-512: that must surface as
    # UnsupportedError at build time, never as a crash in a timed step.
    try:
        trainer = _trainer("lstm", 2, precision="bf16")
    except UnsupportedError as exc:
        assert "bf16" in str(exc)
        return
    assert math.isfinite(trainer.loss_values([trainer.step()])[0])


def test_cpu_trainer_protocol_bits():
    trainer = _trainer("mlp", 2)
    assert trainer.allocator_peak_bytes() is None
    trainer.reset_peak_memory()
    timer = trainer.step_timer()
    timer.start()
    trainer.step()
    timer.stop()
    trainer.synchronize()
    (elapsed,) = timer.elapsed_s()
    assert elapsed > 0
    assert trainer.loss_values([]) == []
    assert isinstance(trainer.device_name, str) and trainer.device_name


# --------------------------------------------------------------------------- adapter


def test_unknown_device_is_usage_error():
    with pytest.raises(UsageError, match="cpu"):
        _trainer("mlp", 2, device="cuda:7")


def test_list_devices_has_cpu():
    devices = adapter.list_devices()
    assert devices[0]["id"] == "cpu" and devices[0]["framework"] == "torch"
    assert set(devices[0]) == {"id", "kind", "name", "memory_bytes", "framework"}


def test_software_versions():
    info = adapter.software()
    assert info["torch"] == torch.__version__ and "cuda" in info and "hip" in info


def test_threads_are_set():
    before = torch.get_num_threads()
    try:
        _trainer("mlp", 2, threads=1)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_is_oom():
    cpu_oom = RuntimeError(
        "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: "
        "you tried to allocate 2147483648 bytes. Error code 12 (Cannot allocate memory)"
    )
    assert adapter.is_oom(cpu_oom)
    assert adapter.is_oom(MemoryError())
    assert adapter.is_oom(torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert not adapter.is_oom(RuntimeError("mat1 and mat2 shapes cannot be multiplied (4x10 and 20x3)"))
    assert not adapter.is_oom(ValueError("out of memory"))


# --------------------------------------------------------------------------- GPU


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_event_timer_and_peak_memory():
    trainer = _trainer("cnn", 32, device="cuda:0")
    trainer.reset_peak_memory()
    timer = trainer.step_timer()
    handles = []
    for _ in range(3):
        timer.start()
        handles.append(trainer.step())
        timer.stop()
    trainer.synchronize()
    assert len(timer.elapsed_s()) == 3 and all(t > 0 for t in timer.elapsed_s())
    assert trainer.allocator_peak_bytes() > 0
    assert all(math.isfinite(x) for x in trainer.loss_values(handles))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_fp16_with_grad_scaler():
    trainer = _trainer("resnet", 16, device="cuda:0", precision="fp16")
    losses = trainer.loss_values([trainer.step() for _ in range(3)])
    assert all(math.isfinite(x) for x in losses)
