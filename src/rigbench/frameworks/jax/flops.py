"""Parameter and training-FLOP counts of the JAX step, without running it.

The model is built under nnx.eval_shape (shapes only, no memory) and the trainer's own step
(step.make_step: forward, backward, optimiser update of every part) is traced to a jaxpr with
abstract inputs at a batch of 2. The counter walks that jaxpr, into nested jaxprs (jit, custom
derivatives; a scan's body times its length), and counts what the analytic figure counts
(workloads/flops.py): matrix multiplies (dot_general) and convolutions at 2 FLOPs per
multiply-add; nothing else. The jaxpr is the program before XLA's optimisations, which is what
the step asks for: XLA's own cost_analysis() also counts element-wise work (bias adds,
activations, batch norm, the optimiser) and counts a convolution's taps over zero padding out,
so it cross-checks the convention less directly.

A convolution counts the taps that can meet a real input element (see _conv_flops): a
transposed convolution per input position, as the analytic convention and torch's counter do.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import optax
from flax import nnx
from jax.extend import core

from rigbench.frameworks.jax import models, step
from rigbench.workloads import Workload, resolved_options

#: Batch size of the counting step; per-sample FLOPs are the total divided by it.
COUNT_BATCH = 2


def _dot_flops(eqn: Any) -> float:
    (lhs_contract, _), _ = eqn.params["dimension_numbers"]
    lhs = eqn.invars[0].aval.shape
    return 2.0 * math.prod(eqn.outvars[0].aval.shape) * math.prod(lhs[i] for i in lhs_contract)


def _conv_flops(eqn: Any) -> float:
    """Per spatial dimension, the taps that can meet a real input element: at most every output
    position times the kernel, less the input dilation's holes, and at most every real input
    position times the kernel. (The first bound is torch's count of a forward convolution, zero
    padding included; the second keeps the full-padded input gradient of a 'valid' convolution
    and a convolution on a 1x1 map from counting their padding.) Exact for the workloads'
    layers; a strided convolution over a map that is not a whole number of strides has its
    input gradient counted a few percent low."""
    lhs, rhs, out = (v.aval.shape for v in (*eqn.invars[:2], eqn.outvars[0]))
    spec = eqn.params["dimension_numbers"]  # lhs/rhs/out specs: (batch|out feature, feature, *spatial)
    taps = 1.0
    for lhs_d, rhs_d, out_d, hole in zip(spec.lhs_spec[2:], spec.rhs_spec[2:], spec.out_spec[2:],
                                         eqn.params["lhs_dilation"], strict=True):
        taps *= min(out[out_d] * rhs[rhs_d] / hole, lhs[lhs_d] * rhs[rhs_d])
    per_tap = out[spec.out_spec[0]] * out[spec.out_spec[1]] * rhs[spec.rhs_spec[1]]
    return 2.0 * per_tap * taps


_COUNTED = {"dot_general": _dot_flops, "conv_general_dilated": _conv_flops}


def jaxpr_flops(jaxpr: Any) -> float:
    """Matmul and convolution FLOPs of a jaxpr, nested jaxprs included."""
    total = 0.0
    for eqn in jaxpr.eqns:
        counter = _COUNTED.get(eqn.primitive.name)
        if counter is not None:
            total += counter(eqn)
        times = eqn.params.get("length", 1) if eqn.primitive.name == "scan" else 1
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(sub, core.ClosedJaxpr):
                    total += times * jaxpr_flops(sub.jaxpr)
                elif isinstance(sub, core.Jaxpr):
                    total += times * jaxpr_flops(sub)
    return total


def abstract_step(workload: Workload, options: dict[str, Any],
                  batch_size: int) -> tuple[step.Step, Any, Any, int]:
    """(the step, abstract state, abstract batch, trainable parameters) without memory."""
    resolved = resolved_options(workload, options)
    tx = step.make_optimizer(workload, workload.default_lr)
    # graph definitions from a shape-only model (optax.identity keeps no state to initialise)
    graphdefs, _ = step.split(workload, nnx.eval_shape(lambda: models.build_model(workload.name, resolved)),
                              optax.identity())
    state = jax.eval_shape(lambda: step.split(workload, models.build_model(workload.name, resolved), tx)[1])
    batch = jax.eval_shape(lambda: step.synthetic_batch(workload, batch_size))
    params = sum(math.prod(x.shape) for part in state.values() for x in jax.tree.leaves(part.params))
    return step.make_step(workload, tx, graphdefs), state, batch, params


def count(workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """(trainable parameters, training FLOPs per sample) of one fp32 training step."""
    fn, state, batch, params = abstract_step(workload, options, COUNT_BATCH)
    jaxpr = jax.make_jaxpr(fn)(state, batch)
    return params, jaxpr_flops(jaxpr.jaxpr) / COUNT_BATCH
