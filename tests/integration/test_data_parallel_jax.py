"""Data-parallel JAX trials for real: rigbench's agent ("ranks" launcher) starts the ranks, each
joins jax.distributed (gloo between the CPU processes) and runs one jitted step on a replicated
state and a batch sharded over the processes; the launcher reads one report per rank.

Checked against things the code does not compute itself: the replicas' parameters against
each other (sha256) and against one plain process trained on the global batch (tests/data_parallel.py,
as every framework), real-data training against one plain process, and a killed rank (the
coordinator too) against the process table."""

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from rigbench.runner.launchers import launcher_for
from rigbench.spec import TrainOptions, TrialSpec
from rigbench.textlimits import error_line
from tests.data_parallel import (
    BATCH,
    check_equals_one_process_on_the_global_batch,
    check_two_ranks_agree,
    dp_spec,
    gone,
    launch,
    one_process,
    signal_rank_when_stepping,
)

pytest.importorskip("jax")
pytestmark = pytest.mark.timeout(300)

#: One process on 2B rows and two on B rows each differ only in float32 summation order (the
#: gradient all-reduce adds two partial sums; one process adds all rows at once). Over 7 Adam
#: steps of mlp that moved the parameter sums by at most 4.4e-6 (sums up to ~200) here, while
#: a different batch moves them by ~100: torch's test uses the same bounds.
RTOL, ATOL = 1e-4, 1e-3


def real_data_spec(world_size: int, batch_size: int) -> TrialSpec:
    return TrialSpec(workload="mlp", framework="jax", device="cpu", batch_size=batch_size, threads=1,
                     world_size=world_size, train=TrainOptions(dataset="digits", epochs=1, max_train_samples=512))


@pytest.fixture(scope="module")
def two_ranks():
    spec = dp_spec(2, "jax")
    return spec, launch(spec)


@pytest.fixture(scope="module")
def reference():
    """Every single-process reference of the module from one plain JAX process: the synthetic
    batch's parameters at 2B and B, and the real-data run on 2B (child.run_trial, as the
    "process" launcher's child runs it)."""
    return one_process("jax", trials=[real_data_spec(1, 2 * BATCH)])


def test_a_jax_trial_of_two_processes_takes_the_ranks_launcher():
    assert launcher_for(dp_spec(2, "jax")).name == "ranks"
    assert launcher_for(dp_spec(1, "jax")).name == "process"


def test_two_ranks_agree_and_hold_identical_replicas(two_ranks):
    _, outcome = two_ranks
    check_two_ranks_agree(outcome)
    r0, r1 = outcome.reports
    assert r0.losses == r1.losses  # the loss of the global batch, replicated
    assert [size for size, _ in r0.allreduce_s][:3] == [4 * 2**10, 2**20, 16 * 2**20]
    assert all(seconds > 0 for _, seconds in r0.allreduce_s)


def test_the_ranks_run_on_cpus_of_their_own():
    # threads=1: rank 0 is pinned to the first allowed CPU, rank 1 to the next (when there is one).
    from rigbench.frameworks.jax import devices

    allowed = sorted(os.sched_getaffinity(0))
    script = "import os; from rigbench.frameworks.jax.devices import pin_threads; pin_threads(1); " \
             "print(sorted(os.sched_getaffinity(0)))"
    contract = {"LOCAL_RANK": "1", "RANK": "1", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}
    out = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, **contract),
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [allowed[1 % len(allowed)]]
    assert devices._local_rank() == 0  # this process is no rank


def test_two_ranks_train_what_one_process_trains_on_the_global_batch(two_ranks, reference):
    check_equals_one_process_on_the_global_batch(two_ranks[1], "jax", RTOL, ATOL, reference)


def test_two_ranks_train_on_real_data_as_one_process_on_the_global_batch(reference):
    # Each rank takes every other sample of the epoch's permutation (data/shard.py), so the two
    # ranks' step k covers the same 2B samples as one process's step k at 2B.
    r0, r1 = launch(real_data_spec(2, BATCH)).reports
    [alone] = reference.reports
    assert [r0.status, r1.status, alone.status] == ["ok"] * 3, [r0.error, r1.error, alone.error]
    assert r0.epochs[0].steps == r1.epochs[0].steps == alone.epochs[0].steps == 512 // (2 * BATCH)
    assert r0.loss_curve == r1.loss_curve  # the global batch's loss, replicated
    assert r0.epochs[0].accuracy == r1.epochs[0].accuracy  # identical replicas evaluate alike
    np.testing.assert_allclose(r0.loss_curve, alone.loss_curve, rtol=1e-3)


@pytest.mark.parametrize("victim", [1, 0])  # rank 0 also runs jax.distributed's coordination service
def test_a_killed_rank_makes_the_trial_a_crash_naming_it_and_leaves_no_process(victim):
    spec = dp_spec(2, "jax", min_steps=3, max_steps=100000, min_seconds=120.0, timeout_s=200.0)
    outcome, signalled = signal_rank_when_stepping(spec, signal.SIGKILL, rank=victim)
    signalled.check_sent(outcome)
    report = outcome.report
    assert report.status == "crash", report.error
    assert error_line(report.error).startswith(f"rank {victim}: ") and "SIGKILL" in report.error
    survivor = outcome.reports[1 - victim]
    assert survivor.collateral and not outcome.reports[victim].collateral, survivor.error
    assert all(gone(pid) for pid in signalled.pids.values()), signalled.pids
