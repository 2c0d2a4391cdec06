"""rigbench's data-parallel step against the DDP tutorial's step, interleaved step by step in
one torchrun job: step_pairs.py's method for `--processes N` (scaling.py prints it).

Each rank joins its process group and builds its trainer as a rigbench rank does
(`adapter.join`, then `adapter.build`: the model wrapped in DistributedDataParallel, the rank's
share of the global batch). The bare step is bare_loops.py's torch loop, the PyTorch tutorials'
`zero_grad / loss_fn(model(x), y).backward() / opt.step()`, run on that same DDP model and batch
(`shared`) with its own SGD: both sides all-reduce the same gradients through the same replica.
The ranks run the same fixed sequence of pairs (ours, bare, bare, ours, ...), so their all-reduces
meet; a pair's time for the job is each side's slowest rank at that step (a synchronous job
waits for it). Per job: the geometric mean of ours / bare over the pairs; scaling.py takes the
t interval over several jobs, as self_check.py does over processes (each carries an offset of
its own: analysis/paired.ratio_over_processes).

Usage: torchrun --standalone --nproc-per-node N benchmarks/ddp_pairs.py WORKLOAD BATCH THREADS PAIRS
(run_job below does this). Rank 0 prints one JSON line: {"ours": [...], "bare": [...],
"replicas_identical": true}; the last says both sides' updates reached every rank alike (a bare
step that skipped DDP's all-reduce would leave the replicas apart).
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

from step_pairs import bare_step, cpu_spec, cpu_trainer, interleave, timed_bare, timed_step


def rank_main(workload: str, batch: int, threads: int, pairs: int) -> dict[str, Any] | None:
    """This rank's part of the job; the job's per-pair times on rank 0, None elsewhere."""
    import torch.distributed as dist

    from rigbench.frameworks import load_adapter
    from rigbench.ranks import RankInfo

    rank = RankInfo.from_env()
    adapter = load_adapter("torch")
    adapter.prepare(threads)
    adapter.join(cpu_spec("torch", workload, batch, threads, rank.world_size), rank)
    trainer = cpu_trainer("torch", workload, batch, threads, rank.world_size)
    mine, theirs = _interleaved(trainer, workload, batch, threads, pairs)
    gathered: list[Any] = [None] * rank.world_size
    dist.all_gather_object(gathered, (mine, theirs, trainer.parameter_fingerprint()[0]))
    # The DDP model goes before its process group, as a rigbench rank's does: left to the
    # interpreter's exit (the bare loop's exec scope is a reference cycle), gloo's threads were
    # torn down under it and the rank aborted ("terminate called without an active exception")
    # in 6 of 14 jobs.
    del trainer
    gc.collect()
    dist.destroy_process_group()
    if rank.rank != 0:
        return None
    return {"ours": [max(times) for times in zip(*(g[0] for g in gathered), strict=True)],
            "bare": [max(times) for times in zip(*(g[1] for g in gathered), strict=True)],
            "replicas_identical": len({g[2] for g in gathered}) == 1}


def _interleaved(trainer: Any, workload: str, batch: int, threads: int, pairs: int) -> tuple[list[float], list[float]]:
    """(ours, bare) times of `pairs` pairs on this rank, the bare step on the trainer's DDP model."""
    step, wait = bare_step("torch", workload, batch, threads, shared=trainer)
    # A fixed count, checked every 100 pairs on every rank alike: the ranks' sequences must match.
    return interleave(timed_step(trainer), timed_bare(step, wait), lambda m, _: len(m) >= pairs)


def run_job(workload: str, batch: int, threads: int, processes: int, pairs: int) -> dict[str, Any]:
    """One job of `processes` ranks under the real `torchrun --standalone`, with the thread
    variables rigbench's torch adapter sets for each rank."""
    from rigbench.frameworks import load_adapter

    spec = cpu_spec("torch", workload, batch, threads, processes)
    env = {**os.environ, **load_adapter("torch").environment(spec),
           "PYTHONPATH": os.pathsep.join([os.path.dirname(os.path.abspath(__file__)), os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory() as logs:  # torchrun's own files, not ours to keep
        proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                               f"--nproc-per-node={processes}", "--log-dir", logs, os.path.abspath(__file__),
                               workload, str(batch), str(threads), str(pairs)],
                              capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"the DDP step-pairs job failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    name, size, nthreads, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    found = rank_main(name, size, nthreads, count)
    if found is not None:
        print(json.dumps(found))
