"""benchmarks/step_pairs.py: the documented bare step built in this process, and interleaved
pairs of it with rigbench's step (the self-check's method that resolves 1%)."""

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import step_pairs  # noqa: E402


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


# The Keras loop over a trainer's layers (KERAS in bare_loops.py, shared=) is checked by the
# keras-torch contract child, which starts Keras on torch anyway: tests/contract/test_keras_torch.py.


def test_ddp_pairs_interleave_in_lockstep_and_keep_the_replicas_identical():
    """benchmarks/ddp_pairs.py under the real torchrun: both ranks run the same 100 pairs, and
    both sides' steps go through DDP's all-reduce (the ranks' shares of the batch differ, so a
    step that skipped it would leave the replicas apart)."""
    import ddp_pairs

    found = ddp_pairs.run_job("cnn", 4, 1, 2, 100)
    assert len(found["ours"]) == len(found["bare"]) == 100
    assert min(found["ours"]) > 0 and min(found["bare"]) > 0
    assert found["replicas_identical"] is True
