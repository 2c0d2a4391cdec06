"""benchmarks/step_pairs.py: the documented bare step built in this process, and interleaved
pairs of it with rigbench's step (the self-check's method that resolves 1%)."""

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import step_pairs  # noqa: E402

from tests.conftest import skip_without  # noqa: E402


def test_the_bare_step_is_the_documented_loop_and_it_trains():
    step, wait = step_pairs.bare_step("torch", "cnn", 8, 1)
    losses = [step().item() for _ in range(12)]  # one fixed batch: the loss must fall
    wait(losses[-1])
    assert losses[-1] < losses[0]


def test_pairs_alternate_and_stop_at_the_budget():
    found = step_pairs.pairs("torch", "cnn", 4, 1, budget_s=0.0, resolve=0.0)  # stops at the first check
    assert found["pairs"] == len(found["ours"]) == len(found["bare"]) == 100
    assert min(found["ours"]) > 0 and min(found["bare"]) > 0
    assert found["sync_s"] >= 0


def test_the_bare_step_trains_the_trainers_own_network():
    """One copy of the weights for both sides (no placement offset): the bare loop's steps
    move the trainer's parameters, and its losses are the trainer's batch's."""
    from rigbench.frameworks import load_adapter

    load_adapter("torch").prepare(1)
    trainer = step_pairs.cpu_trainer("torch", "cnn", 8, 1)
    step, wait = step_pairs.bare_step("torch", "cnn", 8, 1, shared=trainer)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    loss = step()
    wait(loss)
    assert all(not torch.equal(b, p) for b, p in zip(before, trainer.model.parameters()))
    with torch.no_grad():  # the loss the bare step saw was the trainer's network on the trainer's batch
        x, y = trainer.batch
        assert torch.nn.functional.cross_entropy(_forward(trainer, before, x), y).item() == pytest.approx(loss.item(), rel=1e-5)


def _forward(trainer, params, x):
    """The trainer's network with `params` in place of its own, on `x`."""
    return torch.func.functional_call(trainer.model, dict(zip(dict(trainer.model.named_parameters()), params)), (x,))


KERAS_SHARED = r"""
import sys
sys.path.insert(0, sys.argv[1])
import keras, numpy as np, step_pairs
from rigbench.frameworks import load_adapter
load_adapter("keras-torch").prepare(1)
trainer = step_pairs.cpu_trainer("keras-torch", "mlp", 8, 1)
(model,) = trainer.parts.values()
values = lambda: [keras.ops.convert_to_numpy(v.value).copy() for v in model.trainable_variables]
step, wait = step_pairs.bare_step("keras-torch", "mlp", 8, 1, shared=trainer)
before = values()
wait(step())
print(all(not np.array_equal(b, a) for b, a in zip(before, values())))
"""


def test_the_keras_bare_model_is_compiled_over_the_trainers_layers():
    """compile() belongs to a model, so the Keras loop compiles a model of its own over the
    trainer's layers: its steps must move the trainer's variables."""
    import os
    import subprocess

    skip_without("keras")
    here = Path(__file__).resolve().parents[2] / "benchmarks"
    out = subprocess.run([sys.executable, "-c", KERAS_SHARED, str(here)], capture_output=True, text=True,
                         env={**os.environ, "KERAS_BACKEND": "torch"}, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-1] == "True"


def test_ddp_pairs_interleave_in_lockstep_and_keep_the_replicas_identical():
    """benchmarks/ddp_pairs.py under the real torchrun: both ranks run the same 100 pairs, and
    both sides' steps go through DDP's all-reduce (the ranks' shares of the batch differ, so a
    step that skipped it would leave the replicas apart)."""
    import ddp_pairs

    found = ddp_pairs.run_job("cnn", 4, 1, 2, 100)
    assert len(found["ours"]) == len(found["bare"]) == 100
    assert min(found["ours"]) > 0 and min(found["bare"]) > 0
    assert found["replicas_identical"] is True
