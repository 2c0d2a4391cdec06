"""catsdogs is seed 001's notebook network (GitHub saranshagarwal202/Cats_versus_Dogs): its
Keras model.summary() prints 21,463,713 parameters, 21,455,521 trainable, 8,192 non-trainable.
The analytic plan (workloads/flops.py) and the torch model must both give exactly those."""

from __future__ import annotations

import pytest

from rigbench.workloads import WORKLOADS
from rigbench.workloads.flops import nontrainable_params, train_flops_per_sample, trainable_params

TRAINABLE, NON_TRAINABLE, TOTAL = 21_455_521, 8_192, 21_463_713


def _by_hand() -> tuple[int, int, int]:
    """The summary's rows, from the layer list: conv 3*3*c_in*c_out + c_out; dense n_in*n_out +
    n_out; batch norm 4 per unit, of which gamma and beta (2) train."""
    widths = [3, 32, 32, 64, 64, 128, 128, 128, 256, 256, 256, 512, 512, 512]
    convs = sum(9 * a * b + b for a, b in zip(widths, widths[1:], strict=False))
    dense = (4608 * 2048 + 2048) + (2048 * 2048 + 2048) + (2048 * 1 + 1)
    batch_norm = 2 * 4 * 2048
    trainable = convs + dense + batch_norm // 2
    return trainable, batch_norm // 2, trainable + batch_norm // 2


def test_published_totals_by_hand_and_from_the_plan():
    assert _by_hand() == (TRAINABLE, NON_TRAINABLE, TOTAL)
    workload = WORKLOADS["catsdogs"]
    trainable, frozen = trainable_params(workload, {}), nontrainable_params(workload, {})
    assert (trainable, frozen, trainable + frozen) == (TRAINABLE, NON_TRAINABLE, TOTAL)
    # the optimiser and loss of the notebook: Adam at 1e-4, binary cross-entropy (as a logit)
    assert (workload.optimizer, workload.default_lr, workload.loss) == ("adam", 1e-4, "bce_logits")
    assert workload.revision == 2


def test_forward_flops_by_hand():
    # multiply-adds of the 13 convs on their maps (256, 128, 64, 32 and, after the two 3x3
    # pools, 10), then the three dense layers; training is 3x forward less the first conv's
    # input gradient (the data needs none)
    plan = [(3, 32, 256), (32, 32, 256), (32, 64, 128), (64, 64, 128), (64, 128, 64), (128, 128, 64),
            (128, 128, 64), (128, 256, 32), (256, 256, 32), (256, 256, 32), (256, 512, 10),
            (512, 512, 10), (512, 512, 10)]
    conv_macs = [9 * a * b * hw * hw for a, b, hw in plan]
    macs = sum(conv_macs) + 4608 * 2048 + 2048 * 2048 + 2048
    assert train_flops_per_sample(WORKLOADS["catsdogs"]) == 3 * 2 * macs - 2 * conv_macs[0]
    assert 2 * macs == pytest.approx(10.38e9, rel=0.001)


def test_torch_model_has_the_published_totals_and_shapes():
    torch = pytest.importorskip("torch")
    from rigbench.frameworks.torch import models

    model = models.build_model("catsdogs", {})
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    running = sum(b.numel() for name, b in model.named_buffers() if name.endswith(("running_mean", "running_var")))
    assert (trainable, running, trainable + running) == (TRAINABLE, NON_TRAINABLE, TOTAL)
    assert models.trainable_params(model) == TRAINABLE
    assert sum(isinstance(m, torch.nn.Conv2d) for m in model) == 13
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in model)  # no batch norm after convs
    assert [m.kernel_size for m in model if isinstance(m, torch.nn.MaxPool2d)] == [2, 2, 2, 3, 3]
    assert [m.p for m in model if isinstance(m, torch.nn.Dropout)] == [0.5, 0.4]
    flat = []
    (flatten,) = [m for m in model if isinstance(m, torch.nn.Flatten)]
    flatten.register_forward_hook(lambda m, a, out: flat.append(tuple(out.shape)))
    with torch.no_grad():
        assert model.eval()(torch.zeros(2, 3, 256, 256)).shape == (2, 1)  # one logit
    assert flat == [(2, 4608)]


def test_batch_of_one_trains_as_keras_does():
    # torch's BatchNorm1d refuses one sample in training; Keras normalises it to beta, and the
    # smallest batch of a batch sweep is 1
    torch = pytest.importorskip("torch")
    from rigbench.frameworks.torch.models import KerasBatchNorm1d

    norm = KerasBatchNorm1d(4)
    with torch.no_grad():
        norm.bias.copy_(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    x = torch.tensor([[5.0, 6.0, 7.0, 8.0]], requires_grad=True)
    out = norm.train()(x)
    assert out.tolist() == [[1.0, 2.0, 3.0, 4.0]]
    out.sum().backward()
    assert x.grad is not None and x.grad.abs().sum() == 0
    assert norm.running_mean.tolist() == pytest.approx([0.05, 0.06, 0.07, 0.08])  # 0.99 * 0 + 0.01 * x
    assert norm.running_var.tolist() == pytest.approx([0.99] * 4)  # 0.99 * 1 + 0.01 * 0
    assert int(norm.num_batches_tracked) == 1
    # two or more samples: torch's own batch norm, at Keras' epsilon and momentum
    two = torch.tensor([[1.0, 2.0, 3.0, 4.0], [3.0, 2.0, 1.0, 0.0]])
    expected = torch.nn.functional.batch_norm(two, None, None, norm.weight, norm.bias, training=True, eps=1e-3)
    assert torch.allclose(norm(two), expected)
