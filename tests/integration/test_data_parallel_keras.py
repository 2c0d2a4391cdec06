"""Data-parallel Keras trials for real. keras-jax trains under Keras' own distribution API
(keras.distribution.DataParallel) over the processes of jax.distributed, started by rigbench's
agent ("ranks" launcher); keras-torch has no such API, and its trial is `unsupported`.

Checked against things the code does not compute itself: the replicas' parameters against each
other (sha256) and against one plain process trained on the global batch with Keras'
train_on_batch (tests/data_parallel.py, as every framework); a real-data run over processes is
refused before any process starts."""

import pytest

from rigbench.errors import UnsupportedError
from rigbench.runner.launchers import LAUNCHERS, launcher_for
from rigbench.runner.launchers.merge import merge_reports
from rigbench.runner.session import launch_trial
from rigbench.spec import TrainOptions, TrialSpec
from tests.conftest import skip_without
from tests.data_parallel import check_equals_one_process_on_the_global_batch, check_two_ranks_agree, dp_spec, launch

skip_without("keras", "jax")
pytestmark = pytest.mark.timeout(300)

#: As for native JAX (test_data_parallel_jax.py): the two runs differ in float32 summation order
#: only; over 7 Adam steps of mlp the parameter sums moved by at most 1.2e-6 here.
RTOL, ATOL = 1e-4, 1e-3


@pytest.fixture(scope="module")
def two_ranks():
    return launch(dp_spec(2, "keras-jax"))


def test_a_keras_jax_trial_of_two_processes_takes_the_ranks_launcher():
    assert launcher_for(dp_spec(2, "keras-jax")).name == "ranks"


def test_two_ranks_agree_and_hold_identical_replicas(two_ranks):
    check_two_ranks_agree(two_ranks)
    r0, r1 = two_ranks.reports
    assert r0.losses == r1.losses  # train_on_batch's loss of the global batch, replicated
    assert r0.allreduce_s and all(seconds > 0 for _, seconds in r0.allreduce_s)


def test_two_ranks_train_what_one_process_trains_on_the_global_batch(two_ranks):
    check_equals_one_process_on_the_global_batch(two_ranks, "keras-jax", RTOL, ATOL)


def test_a_real_data_run_over_processes_is_unsupported_before_any_process_starts(monkeypatch):
    spec = TrialSpec(workload="mlp", framework="keras-jax", device="cpu", batch_size=16, threads=1, world_size=2,
                     train=TrainOptions(dataset="digits", epochs=1, max_train_samples=64))
    reason = ("keras-jax trains data-parallel on the speed protocol's batches (rigbench run, scaling, sweep); "
              "a real-data training run takes one process")
    with pytest.raises(UnsupportedError) as refused:
        launcher_for(spec)
    assert str(refused.value) == reason

    # The session stores it as an `unsupported` trial with that reason, and starts nothing.
    def no_launch(*args, **kwargs):
        raise AssertionError("no process may start for a trial the launcher refuses")

    for launcher in LAUNCHERS.values():
        monkeypatch.setattr(launcher, "launch", no_launch)
    trial = merge_reports(launch_trial(spec).reports)
    assert (trial.status, trial.error) == ("unsupported", reason)
    # Only the real-data run over processes: in one process it trains, and over processes a speed trial runs.
    assert launcher_for(spec.model_copy(update={"world_size": 1})).name == "process"
    assert launcher_for(spec.model_copy(update={"train": None})).name == "ranks"


def test_a_keras_torch_trial_of_two_processes_is_unsupported_with_the_reason():
    with pytest.raises(UnsupportedError, match=r"keras-torch has no data-parallel support: .*JAX backend only"):
        launcher_for(dp_spec(2, "keras-torch"))
