"""Trial variants in the torch trainer: tf32, channels-last and torch.compile (CPU)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from rigbench.errors import UnsupportedError  # noqa: E402
from rigbench.frameworks import torch as adapter  # noqa: E402
from rigbench.spec import TrialSpec  # noqa: E402
from rigbench.workloads import WORKLOADS  # noqa: E402


def _trainer(workload: str, batch: int, **spec):
    return adapter.build(TrialSpec(workload=workload, batch_size=batch, threads=1, **spec), WORKLOADS[workload])


def test_tf32_is_unsupported_off_nvidia():
    with pytest.raises(UnsupportedError, match="tf32"):
        _trainer("mlp", 4, precision="tf32")


def test_channels_last_needs_a_convolution():
    with pytest.raises(UnsupportedError, match="no 2-D convolution"):
        _trainer("mlp", 4, channels_last=True)


def test_channels_last_lays_out_weights_and_batch_nhwc():
    trainer = _trainer("cnn", 4, channels_last=True)
    conv = next(m for m in trainer.model.modules() if isinstance(m, torch.nn.Conv2d))
    assert conv.weight.is_contiguous(memory_format=torch.channels_last)
    assert not conv.weight.is_contiguous()  # NCHW-contiguous would mean the flag did nothing
    images = trainer.batch[0]
    assert images.is_contiguous(memory_format=torch.channels_last) and not images.is_contiguous()
    assert math.isfinite(float(trainer.step()))


def test_compile_wraps_the_model_in_its_mode_still_trains_and_says_what_it_did():
    """reduce-overhead reaches inductor, which asks for CUDA graphs and, on a CPU, skips them:
    the compile line says so (default mode asks for none, so nothing is skipped there)."""
    from torch._dynamo.utils import counters

    counters.clear()  # process-wide: this process may have compiled in another test
    spec = TrialSpec(workload="mlp", batch_size=8, threads=1, compile="reduce-overhead")
    trainer = adapter.build(spec, WORKLOADS["mlp"])
    assert isinstance(trainer.model, torch._dynamo.eval_frame.OptimizedModule)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    losses = [float(trainer.step()) for _ in range(3)]
    assert all(math.isfinite(x) for x in losses)
    after = list(trainer.model.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after))  # the optimiser updated the compiled model's weights
    assert adapter.compilation(spec) == ("torch.compile reduce-overhead: 1 graph, 0 graph breaks; "
                                         "CUDA graphs: 0 recorded, skipped 1 time")
    assert adapter.compilation(spec.model_copy(update={"compile": "off"})) is None


def test_labels_name_the_variant():
    spec = TrialSpec(workload="cnn", batch_size=8, threads=2, compile=True, channels_last=True, lr=0.01)
    assert spec.label() == "cnn torch cpu b8 fp32 t2 compile channels-last lr=0.01"
