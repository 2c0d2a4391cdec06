"""Data-parallel TensorFlow trials for real: rigbench's agent starts the ranks ("ranks"
launcher), each a worker of tf.distribute.MultiWorkerMirroredStrategy from TF_CONFIG (ring
all-reduce over gRPC on the CPU), and the launcher reads one report per rank from files.

Checked against things the code does not compute itself: the ranks' timed step counts against
each other, the replicas' parameters against each other (sha256) and against one plain
TensorFlow process (no strategy) trained on the global batch (tests/data_parallel.py, as every
framework), and a killed rank against the process table."""

import signal
import time

import pytest

from rigbench.runner.launchers import launcher_for
from rigbench.textlimits import error_line
from tests.conftest import skip_without
from tests.data_parallel import (
    check_equals_one_process_on_the_global_batch,
    check_two_ranks_agree,
    dp_spec,
    gone,
    launch,
    signal_rank_when_stepping,
)

skip_without("tensorflow")
pytestmark = pytest.mark.timeout(300)

#: One worker on 2B rows against two on B each: the same mean gradient, summed in another
#: order (each replica's mean over B rows, halved, then the ring's sum, against one mean over
#: 2B rows), so float32 rounding differs per step. Seen here after 7 SGD-momentum steps: at
#: most 2e-6 apart on per-variable sums of 5e-4 to ~170 in size; a batch of other rows
#: moves them by 1 and more (the check can fail).
RTOL, ATOL = 1e-5, 1e-5


@pytest.fixture(scope="module")
def two_ranks():
    spec = dp_spec(2, "tensorflow")
    return spec, launch(spec)


def test_a_tensorflow_trial_of_two_processes_takes_the_ranks_launcher():
    assert launcher_for(dp_spec(2, "tensorflow")).name == "ranks"
    assert launcher_for(dp_spec(1, "tensorflow")).name == "process"


def test_two_ranks_agree_and_hold_identical_replicas(two_ranks):
    _, outcome = two_ranks
    check_two_ranks_agree(outcome)
    assert len(outcome.reports[0].param_sums) == 8  # mlp: four Dense layers, kernel and bias each


def test_two_ranks_train_what_one_worker_trains_on_the_global_batch(two_ranks):
    # The strategy sums the replicas' gradients of their mean losses halved: the gradient of the
    # mean loss over the 2 x 16 rows, which one worker on the whole batch computes directly.
    check_equals_one_process_on_the_global_batch(two_ranks[1], "tensorflow", RTOL, ATOL)


def test_a_killed_rank_names_it_and_its_peer_is_collateral():
    # Rank 0 waits in the gradient all-reduce for the killed rank 1: TensorFlow aborts the
    # collective (gRPC UNAVAILABLE), which parallel.TfCollective.lost_peer recognises.
    spec = dp_spec(2, "tensorflow", min_steps=3, max_steps=100000, min_seconds=120.0, timeout_s=200.0)
    outcome, signalled = signal_rank_when_stepping(spec, signal.SIGKILL, rank=1)
    signalled.check_sent(outcome)
    assert outcome.report.status == "crash", outcome.report.error
    assert error_line(outcome.report.error).startswith("rank 1: ") and "SIGKILL" in outcome.report.error
    assert outcome.reports[0].collateral and not outcome.reports[1].collateral
    time.sleep(1)
    assert all(gone(pid) for pid in signalled.pids.values()), signalled.pids
