"""The torch adapter's networks and trainer, on the CPU (GPU tests skip without CUDA)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from rigbench.errors import UnsupportedError, UsageError  # noqa: E402
from rigbench.frameworks import torch as adapter  # noqa: E402
from rigbench.frameworks.torch import models, step  # noqa: E402
from rigbench.spec import TrialSpec  # noqa: E402
from rigbench.workloads import WORKLOADS, resolved_options  # noqa: E402


def _trainer(workload: str, batch: int, **spec):
    return adapter.build(TrialSpec(workload=workload, batch_size=batch, **spec), WORKLOADS[workload])


def _params(workload: str, **options) -> int:
    w = WORKLOADS[workload]
    return models.trainable_params(models.build_model(workload, resolved_options(w, options)))


def test_optimiser_arguments_come_from_the_workload():
    dcgan, resnet = _trainer("dcgan", 2), _trainer("resnet", 2, threads=1)
    assert list(dcgan.optimizers) == ["discriminator", "generator"]  # the declared update order
    assert all(o.defaults["betas"] == (0.5, 0.999) for o in dcgan.optimizers.values())  # Radford et al.
    assert resnet.optimizers["model"].defaults["momentum"] == 0.9


# --------------------------------------------------------------------------- architecture
# Parameter counts (against the papers' figures) are asserted framework-free on the analytic
# counts in tests/unit/test_units_and_workloads.py; tests/contract/ checks every adapter
# against those.


def test_catsdogs_shapes_as_the_notebook_prints_them():
    # seed 001's notebook summary: conv outputs (None, 256, 256, 32) first, (None, 64, 64, 128)
    # sixth, (None, 10, 10, 512) last; its totals are asserted in test_catsdogs_network.py
    model = models.build_model("catsdogs", {})
    convs = [m for m in model if isinstance(m, torch.nn.Conv2d)]
    assert len(convs) == 13
    assert sum(isinstance(m, torch.nn.MaxPool2d) for m in model) == 5
    assert sum(isinstance(m, torch.nn.Linear) for m in model) == 3
    shapes = {}
    for i in (0, 5, 12):
        convs[i].register_forward_hook(lambda m, a, out, i=i: shapes.__setitem__(i, tuple(out.shape)))
    with torch.no_grad():
        model.eval()(torch.zeros(1, 3, 256, 256))
    assert shapes == {0: (1, 32, 256, 256), 5: (1, 128, 64, 64), 12: (1, 512, 10, 10)}
    assert models.trainable_params(model) == 21_455_521


# --------------------------------------------------------------------------- training
# The falling loss of every workload is in tests/contract/test_workloads.py.


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
    update = trainer.update_part

    def checked_update(loss, part):
        before = loss.item()
        update(loss, part)
        before_after.append((part, before, current(part)))

    trainer.update_part = checked_update
    handles = [trainer.step() for _ in range(5)]
    assert [p for p, _, _ in before_after] == ["discriminator", "generator"] * 5
    assert all(after < before for _, before, after in before_after), before_after
    assert all(math.isfinite(x) for x in trainer.loss_values(handles))
    assert trainer.params == _params("dcgan")


def test_lstm_targets_are_next_tokens():
    inputs, targets = step.synthetic_batch(WORKLOADS["lstm"], 3)
    assert inputs.shape == targets.shape == (3, 32)
    assert torch.equal(inputs[:, 1:], targets[:, :-1])
    assert 0 <= int(inputs.min()) and int(inputs.max()) < WORKLOADS["lstm"].vocab == 10_000


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


# --------------------------------------------------------------------------- adapter


def test_unknown_device_is_usage_error():
    with pytest.raises(UsageError, match="cpu"):
        _trainer("mlp", 2, device="cuda:7")


def test_software_versions():
    # the contract's keys are checked in tests/contract/; these are torch's own
    info = adapter.software()
    assert info["torch"] == torch.__version__ and "cuda" in info and "hip" in info


def test_prepare_sets_the_threads():
    before = torch.get_num_threads()
    try:
        adapter.prepare(1)  # the child calls it once, before building
        assert torch.get_num_threads() == 1 and adapter.software()["num_threads"] == 1
    finally:
        torch.set_num_threads(before)


# --------------------------------------------------------------------------- GPU


def test_a_cuda_graph_step_counts_its_private_pool_in_the_allocator_peak(monkeypatch):
    """Once recorded, a CUDA graph's private pool counts as reserved, not allocated (an H200's cnn
    under reduce-overhead read a 3 MiB allocated peak, eager 163): in the CUDA-graph modes the
    peak is the reserved one; eager steps keep the allocated peak. This CPU has no CUDA, so the
    two counters are stand-ins; test_gpu_paths checks the figures on a GPU."""
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: 3 << 20)
    monkeypatch.setattr(torch.cuda, "max_memory_reserved", lambda device=None: 170 << 20)
    trainer = _trainer("mlp", 8)
    trainer.device = torch.device("cuda:0")
    assert trainer.allocator_peak_bytes() == 3 << 20  # eager
    trainer._marks_steps = True  # what reduce-overhead and max-autotune set
    assert trainer.allocator_peak_bytes() == 170 << 20


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
