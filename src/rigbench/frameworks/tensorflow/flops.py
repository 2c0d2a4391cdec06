"""Parameter and training-FLOP counts of the TensorFlow step, from XLA's own program.

The model is built at a batch of 2 and the trainer's own step (step.step_fn: forward,
backward, optimiser update of every part; its tf.function's graph) is lowered by XLA
(jit_compile) to HLO without running it (`experimental_get_compiler_ir(...)(stage="hlo")`, the
program before XLA's optimisations). The counter keeps the entry computation's instructions that the result
depends on (TensorFlow's gradient functions also emit gradients nobody asked for, e.g. a
convolution's input gradient for the data, which XLA then removes), and counts what the
analytic figure counts (workloads/flops.py): `dot` and `convolution` at 2 FLOPs per
multiply-add; nothing else. A convolution counts the taps that can meet a real input element
per spatial dimension, the rule of frameworks/jax/flops.py (_conv_flops), so a transposed
convolution counts per input position. XLA's cost analysis is not used: it also counts
element-wise work and taps over zero padding.
"""

from __future__ import annotations

import math
import re
from typing import Any, cast

import keras
import tensorflow as tf

from rigbench.frameworks.tensorflow import parallel, step
from rigbench.frameworks.tensorflow.trainer import TfTrainer
from rigbench.spec import TrialSpec
from rigbench.workloads import Workload

#: Batch size of the counting step; per-sample FLOPs are the total divided by it.
COUNT_BATCH = 2

_INSTRUCTION = re.compile(r"^\s*(ROOT\s+)?%(\S+)\s*=\s*(.*)$")
_SHAPE = re.compile(r"\w+\[([\d,]*)\]")
_OP = re.compile(r"^\S+\s+(dot|convolution)\((.*?)\),")


def _shapes(text: str) -> list[tuple[int, ...]]:
    return [tuple(int(d) for d in dims.split(",") if d) for dims in _SHAPE.findall(text)]


def _dot_flops(out: tuple[int, ...], lhs: tuple[int, ...], attrs: str) -> float:
    found = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", attrs)
    contracting = [int(d) for d in found.group(1).split(",") if d] if found else []
    return 2.0 * math.prod(out) * math.prod(lhs[i] for i in contracting)


def _conv_flops(out: tuple[int, ...], lhs: tuple[int, ...], rhs: tuple[int, ...], attrs: str) -> float:
    """frameworks/jax/flops.py's rule on an HLO convolution: per spatial dimension the taps
    that can meet a real input element, times output batch x output features x kernel input
    features."""
    found = re.search(r"dim_labels=(\w+)_(\w+)->(\w+)", attrs)
    assert found, attrs
    lhs_l, rhs_l, out_l = found.groups()
    dilation = re.search(r"lhs_dilate=([\dx]+)", attrs)
    spatial = [str(i) for i in range(len(out) - 2)]
    holes = [int(h) for h in dilation.group(1).split("x")] if dilation else [1] * len(spatial)
    taps = 1.0
    for d, hole in zip(spatial, holes, strict=True):
        k = rhs[rhs_l.index(d)]
        taps *= min(out[out_l.index(d)] * k / hole, lhs[lhs_l.index(d)] * k)
    return 2.0 * out[out_l.index("b")] * out[out_l.index("f")] * rhs[rhs_l.index("i")] * taps


def hlo_flops(hlo: str) -> float:
    """Matmul and convolution FLOPs of the live instructions of an HLO module's entry computation."""
    entry = hlo[hlo.index("\nENTRY"):]
    lines: dict[str, str] = {}
    root = None
    for line in entry.splitlines()[1:]:
        if line.startswith("}"):
            break
        found = _INSTRUCTION.match(line)
        if found:
            lines[found.group(2)] = found.group(3)
            root = found.group(2) if found.group(1) else root
    assert root is not None, "no ROOT in the entry computation"
    live, todo = set(), [root]
    while todo:  # what the result depends on
        name = todo.pop()
        if name in live or name not in lines:
            continue
        live.add(name)
        todo += re.findall(r"%([\w.\-]+)", lines[name])
    total = 0.0
    for name in live:
        found = _OP.match(lines[name])
        if not found:
            continue
        kind, operands = found.groups()
        out, (lhs, rhs) = _shapes(lines[name].split(" ", 1)[0])[0], _shapes(operands)[:2]
        attrs = lines[name][found.end():]
        total += _dot_flops(out, lhs, attrs) if kind == "dot" else _conv_flops(out, lhs, rhs, attrs)
    return total


def step_flops(trainer: TfTrainer) -> float:
    """Training FLOPs per sample of `trainer`'s step on its resident batch (lowered, not run).
    The graph is the trainer's own tf.function's for that batch, traced once: a trainer that has
    stepped traced it then (tracing a step took 1-2 s on a 2-core CPU, as long as lowering it),
    called from a jit_compile function, which XLA inlines. A data-parallel rank's step runs
    under its strategy: step.step_fn alone is traced for it."""
    batch = trainer.synthetic()
    if parallel.joined():
        traced = tf.function(step.step_fn(trainer.workload, trainer.parts, trainer.optimizers), jit_compile=True)
    else:  # step.make_step's tf.function
        graph = cast(Any, trainer.compiled_step).get_concrete_function(*batch)
        traced = tf.function(lambda x, y: graph(x, y), jit_compile=True)
    hlo = traced.experimental_get_compiler_ir(*batch)(stage="hlo")
    return hlo_flops(hlo) / int(batch[0].shape[0])


def count(workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """(trainable parameters, training FLOPs per sample) of one fp32 training step on the CPU."""
    spec = TrialSpec(workload=workload.name, framework="tensorflow", device="cpu", batch_size=COUNT_BATCH,
                     workload_options=options)
    trainer = TfTrainer(spec, workload)
    found = trainer.params, step_flops(trainer)
    del trainer
    keras.backend.clear_session()  # the counting model's graph and names are not the trial's
    return found
