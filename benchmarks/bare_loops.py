"""Bare training loops, one per framework, written the way each framework's own documentation
writes one, for benchmarks/self_check.py to pair rigbench against.

Each takes the same network (rigbench's builder for that framework, so the work is equal), the
same synthetic batch, optimiser (SGD with momentum, the classifiers' reference) and thread set-up
(the adapter's `environment` and `prepare`, so only the harness differs), warms up 3 steps,
then times N steps with one wait for the device at the end (the documented loop: no per-step
sync), and reads the process's CPU time over the same steps. A second pass times each step
alone, with a wait after it, for the per-step minimum. It prints one JSON line:
{"wall_per_step", "cpu_per_step", "min_step"} in seconds.

benchmarks/step_pairs.py runs the same sources in the process of a rigbench trainer, with
`shared` set to that trainer (None here). Where the framework updates weights in place (torch,
TensorFlow, Keras on either backend) the loop then trains the trainer's own network and batch,
so both sides read one copy of the weights: two copies of one network, placed differently in
memory, differ by up to 7% in speed (benchmarks/twin_trainers.py). The loop keeps its own
optimiser (and, in Keras, its own compiled model over the shared layers), so what differs is
still everything the harness chose. JAX builds its own: its step donates the state's buffers,
and XLA places each step's output anew anyway.

  torch        torch.optim.SGD + nn.CrossEntropyLoss, eager (the PyTorch tutorials' loop)
  jax          Flax NNX model split into a pure function, jax.jit with donated state, optax.sgd
               (Flax's "performance" guide; nnx.jit alone re-walks the model graph every call)
  tensorflow   keras.optimizers.SGD under tf.GradientTape in a tf.function (TensorFlow's
               "custom training loop" guide)
  keras-jax,   model.compile(SGD, SparseCategoricalCrossentropy) + train_on_batch (Keras'
  keras-torch  documented single-batch step; jit_compile left at Keras' "auto")
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

TIMING = r"""
import json, sys, time
name, batch, steps, threads, framework = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
from rigbench.frameworks import load_adapter
from rigbench.workloads import get_workload, resolved_options
load_adapter(framework).prepare(threads)
w = get_workload(name)
options = resolved_options(w, {})
momentum = w.optimizer_args.get("momentum", 0.0)
shared = None  # step_pairs.py: the rigbench trainer whose network the loop trains

def timed(train_step, wait):
    for _ in range(3):
        out = train_step()
    wait(out)
    cpu0, t0 = time.process_time(), time.perf_counter()
    for _ in range(steps):
        out = train_step()
    wait(out)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    each = []
    for _ in range(steps):
        s = time.perf_counter()
        wait(train_step())
        each.append(time.perf_counter() - s)
    print(json.dumps({"wall_per_step": wall / steps, "cpu_per_step": cpu / steps, "min_step": min(each)}))
"""

TORCH = r"""
import torch
from rigbench.frameworks.torch import models, step
if shared is not None:
    model, (x, y) = shared.model, shared.batch
else:
    torch.manual_seed(0)
    model = models.build_model(name, options).train()
    x, y = step.synthetic_batch(w, batch)
opt = torch.optim.SGD(model.parameters(), lr=w.default_lr, momentum=momentum)
loss_fn = torch.nn.CrossEntropyLoss()
def train_step():
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss
timed(train_step, lambda loss: None)  # the CPU runs torch synchronously
"""

JAX = r"""
import functools, jax, optax
from flax import nnx
from rigbench.frameworks.jax import models, step
model = models.build_model(name, options, seed=0)
optimizer = nnx.Optimizer(model, optax.sgd(w.default_lr, momentum=momentum or None), wrt=nnx.Param)
graphdef, state = nnx.split((model, optimizer))
x, y = step.synthetic_batch(w, batch)

@functools.partial(jax.jit, donate_argnums=0)
def train_step(state, x, y):
    model, optimizer = nnx.merge(graphdef, state)
    def loss_fn(model):
        return optax.softmax_cross_entropy_with_integer_labels(model(x), y).mean()
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss, nnx.state((model, optimizer))

def one():
    global state
    loss, state = train_step(state, x, y)
    return loss
timed(one, jax.block_until_ready)
"""

TENSORFLOW = r"""
import keras, tensorflow as tf
from rigbench.frameworks.keras import models, step
if shared is not None:
    (model,), (x, y) = shared.parts.values(), shared.batch
else:
    keras.utils.set_random_seed(0)
    model = next(iter(models.build_parts(w, options).values()))
    x, y = (tf.constant(t) for t in step.synthetic_batch(w, batch))
opt = keras.optimizers.SGD(learning_rate=w.default_lr, momentum=momentum)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss
timed(lambda: train_step(x, y), lambda loss: loss.numpy())
"""

KERAS = r"""
import keras
from rigbench.frameworks.keras import models, step
if shared is not None:  # compile() belongs to a model: a model of our own over the trainer's layers
    (theirs,), (x, y) = shared.parts.values(), shared.batch
    model = keras.Sequential([keras.Input(theirs.input_shape[1:]), *theirs.layers])
else:
    keras.utils.set_random_seed(0)
    model = next(iter(models.build_parts(w, options).values()))
    x, y = step.synthetic_batch(w, batch)
model.compile(optimizer=keras.optimizers.SGD(learning_rate=w.default_lr, momentum=momentum),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
timed(lambda: model.train_on_batch(x, y), lambda loss: None)  # train_on_batch returns a host float
"""

LOOPS = {"torch": TORCH, "jax": JAX, "tensorflow": TENSORFLOW, "keras-jax": KERAS, "keras-torch": KERAS}


def trains_shared(framework: str) -> bool:
    """Whether `framework`'s loop trains the network of the trainer step_pairs hands it (its
    source reads `shared`) rather than building its own."""
    return "shared" in LOOPS[framework]


def run_bare(framework: str, workload: str, batch: int, steps: int, threads: int,
             env: dict[str, str]) -> dict[str, float]:
    """The bare loop of `framework` in a fresh process with `env`: its JSON figures."""
    proc = subprocess.run([sys.executable, "-c", TIMING + LOOPS[framework], workload, str(batch), str(steps),
                           str(threads), framework], capture_output=True, text=True, env={**os.environ, **env})
    if proc.returncode != 0:
        raise SystemExit(f"the bare {framework} loop failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])
