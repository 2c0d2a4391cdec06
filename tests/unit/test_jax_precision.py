"""bf16 mixed precision in the JAX adapter (frameworks/jax/precision.py): the step's matrix work
runs in bfloat16 (read off the traced step, not assumed), the same FLOPs as at fp32, while the
parameters, the optimiser state and the loss stay float32; the loss agrees with fp32's to bf16's
resolution; fp16 is refused by name. The attention kernel on the CPU is XLA's at either
precision (cuDNN's fused one is for NVIDIA GPUs: tests/integration/test_gpu_paths.py)."""

from __future__ import annotations

from collections import Counter

import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("flax")

import jax.numpy as jnp  # noqa: E402
from jax.extend import core  # noqa: E402

from rigbench.errors import UnsupportedError  # noqa: E402
from rigbench.frameworks.jax import attention  # noqa: E402
from rigbench.frameworks.jax.flops import _COUNTED, count  # noqa: E402
from rigbench.frameworks.jax.trainer import JaxTrainer  # noqa: E402
from rigbench.spec import TrialSpec  # noqa: E402
from rigbench.workloads import WORKLOADS  # noqa: E402
from tests.contract.test_workloads import SMALL_OPTIONS  # noqa: E402


def _trainer(name: str, precision: str, batch: int = 2) -> JaxTrainer:
    spec = TrialSpec(workload=name, framework="jax", device="cpu", batch_size=batch, precision=precision,
                     threads=1, workload_options=SMALL_OPTIONS.get(name, {}))
    return JaxTrainer(spec, WORKLOADS[name])


def _matrix_flops_by_dtype(jaxpr) -> Counter:
    """FLOPs of every matmul and convolution in the jaxpr, nested ones included, by the dtypes
    of their two operands ("bfloat16", "float32", or "mixed")."""
    found: Counter = Counter()
    for eqn in jaxpr.eqns:
        counter = _COUNTED.get(eqn.primitive.name)
        if counter is not None:
            dtypes = {str(var.aval.dtype) for var in eqn.invars[:2]}
            found[dtypes.pop() if len(dtypes) == 1 else "mixed"] += counter(eqn)
        times = eqn.params.get("length", 1) if eqn.primitive.name == "scan" else 1
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                inner = sub.jaxpr if isinstance(sub, core.ClosedJaxpr) else sub
                if isinstance(inner, core.Jaxpr):
                    for dtype, flops in _matrix_flops_by_dtype(inner).items():
                        found[dtype] += times * flops
    return found


#: One workload per kind of layer bf16 must reach: Linear (mlp), Conv (cnn), the LSTM's scan over
#: raw kernels (lstm), batch norm, the transposed convolution and the GAN's two updates (dcgan),
#: a residual net's batch norms (resnet), Embed, LayerNorm and attention (gpt), the ViT's raw class
#: token and positions (vit). autoencoder, rcnn and catsdogs add no other kind.
KINDS = ["mlp", "cnn", "lstm", "dcgan", "resnet", "gpt", "vit"]


@pytest.mark.parametrize("name", KINDS)
def test_bf16_runs_the_matrix_work_in_bfloat16_and_keeps_float32_state(name):
    trainer = _trainer(name, "bf16")
    bf16 = _matrix_flops_by_dtype(jax.make_jaxpr(trainer._local_step)(trainer.state, trainer.batch).jaxpr)
    _, fp32_per_sample = count(WORKLOADS[name], SMALL_OPTIONS.get(name, {}))  # the fp32 step's jaxpr
    assert bf16.total() / 2 == pytest.approx(fp32_per_sample, rel=1e-9)  # the same work...
    assert bf16["float32"] == 0, bf16  # ...none of it in float32 alone (the LSTM's scan, raw kernels)
    # jax.nn.dot_product_attention keeps q k^T's logits in float32 by design, so the two
    # backward products of q k^T meet a float32 gradient: 2.4% of gpt tiny's matrix FLOPs
    assert bf16["mixed"] <= 0.05 * bf16.total(), bf16
    state, loss, _ = jax.eval_shape(trainer._local_step, trainer.state, trainer.batch)  # after a step
    dtypes = {str(leaf.dtype) for part in state.values()
              for leaf in jax.tree.leaves(part) if jnp.issubdtype(leaf.dtype, jnp.floating)}
    assert dtypes == {"float32"} and loss.dtype == jnp.float32, dtypes


@pytest.mark.parametrize("name", ["cnn", "gpt"])
def test_bf16_losses_follow_fp32_to_bfloat16_resolution(name):
    """From the same weights on the same batch: three steps' losses within 2% (bfloat16 keeps 8
    bits of mantissa, a relative 0.4% per rounding)."""
    runs = {}
    for precision in ("fp32", "bf16"):
        trainer = _trainer(name, precision, batch=4)
        runs[precision] = trainer.loss_values([trainer.step() for _ in range(3)])
    assert runs["bf16"] == pytest.approx(runs["fp32"], rel=0.02)
    assert runs["bf16"] != runs["fp32"]  # it did compute in another precision


def test_fp16_is_refused_naming_what_is_supported():
    with pytest.raises(UnsupportedError, match=r"fp16 training is not implemented in the JAX adapter \(fp32, tf32, bf16"):
        _trainer("mlp", "fp16")


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_the_attention_kernel_on_the_cpu_is_xlas(precision):
    spec = TrialSpec(workload="gpt", framework="jax", device="cpu", batch_size=2, precision=precision)
    assert attention(spec, WORKLOADS["gpt"]) == "jax.nn.dot_product_attention: xla"
    assert attention(spec.model_copy(update={"workload": "mlp"}), WORKLOADS["mlp"]) is None
