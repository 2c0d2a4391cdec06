"""Two real processes, one fast and one slow, agree on their timed steps through a gloo
all-reduce (MAX), as the ranks of a data-parallel trial will: both run the same number."""

import multiprocessing
from datetime import timedelta

import pytest

from rigbench.runner.protocol import measure
from rigbench.spec import MeasureOptions
from tests.unit.fake_trainer import ScriptedTrainer

pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(120)

#: Seconds per step of rank 0 and rank 1: for 0.2 s of timing, ~50 and ~10 steps.
STEP_S = (0.004, 0.02)


def _rank(rank: int, init_method: str, results) -> None:
    import torch
    import torch.distributed as dist

    # A short collective timeout: a rank left waiting fails the test instead of hanging it.
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=2,
                            timeout=timedelta(seconds=30))
    estimates = []

    def agree(n: int) -> int:
        estimates.append(n)
        value = torch.tensor([n], dtype=torch.int64)
        dist.all_reduce(value, op=dist.ReduceOp.MAX)
        return int(value.item())

    try:
        opts = MeasureOptions(warmup_steps=2, warmup_seconds=0.0, min_steps=3, min_seconds=0.2)
        m = measure(ScriptedTrainer(step_s=STEP_S[rank]), opts, agree=agree)
        # One more collective after measuring: it completes only if both ranks got here.
        dist.barrier()
        results.put((rank, estimates, m.warmup_steps, len(m.step_times_s)))
    finally:
        dist.destroy_process_group()


def test_fast_and_slow_ranks_run_the_same_number_of_timed_steps(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    init_method = f"file://{tmp_path / 'rendezvous'}"
    procs = [ctx.Process(target=_rank, args=(rank, init_method, results)) for rank in (0, 1)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=90)
    assert [proc.exitcode for proc in procs] == [0, 0]
    by_rank = {rank: rest for rank, *rest in (results.get(timeout=5) for _ in procs)}
    (est0, warm0, timed0), (est1, warm1, timed1) = by_rank[0], by_rank[1]
    # The fast rank needs clearly more steps for 0.2 s than the slow one...
    assert est0[1] > est1[1]
    # ...and both run the larger number, after the same warm-up.
    assert timed0 == timed1 == max(est0[1], est1[1])
    assert warm0 == warm1
