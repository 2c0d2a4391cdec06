"""The Keras networks against torch's (tests/keras_parity.py): parameter counts, initial weights,
ten SGD steps' losses and outputs on torch's weights, from the parity part of the contract
child's report. Imported, with keras_family's checks, by the modules of the frameworks whose
child compares the networks (keras_parity.NETWORKS: test_keras_tensorflow.py,
test_keras_torch.py); keras-jax runs the same keras.layers/keras.ops code and has no copy."""

from __future__ import annotations

import pytest

from tests.contract.keras_family import _parity
from tests.keras_parity import FORWARD
from tests.loss_curves import CURVE_WORKLOADS, LOSS_CURVE_RTOL
from tests.weight_spreads import assert_same_spreads


def test_parameter_counts_equal_torch(report):
    found = _parity(report, "params")
    assert set(found["params"]) == set(found["workloads"])
    for name, (keras_params, torch_params) in found["params"].items():
        assert keras_params == torch_params, name


def test_initial_weights_are_drawn_as_torch_draws_them(report):
    """The host-drawn initialisers (frameworks/keras/inits.py) give every large tensor of every
    workload the mean and spread torch's own initialisation gives it."""
    found = _parity(report, "initial")
    assert set(found["initial"]) == set(found["workloads"])
    for name, (ours, theirs) in found["initial"].items():
        try:
            assert_same_spreads(ours, theirs)
        except AssertionError as error:
            raise AssertionError(f"{name}: {error}") from None


@pytest.mark.parametrize("name", CURVE_WORKLOADS)
def test_ten_sgd_steps_give_torchs_loss_curve(report, name):
    """From torch's weights, ten steps of the adapter's own step (tensorflow: GradientTape under
    tf.function; keras-torch: Keras' train_on_batch) with SGD at CURVE_LR on the same ten
    batches: every step's loss within LOSS_CURVE_RTOL of torch's."""
    expected, got = _parity(report, "curves")["curves"][name]
    assert expected[-1] != expected[0]  # the weights moved: the curve tests the updates too
    assert got == pytest.approx(expected, rel=LOSS_CURVE_RTOL)


@pytest.mark.parametrize("name", FORWARD)
def test_forward_on_torch_weights_agrees(report, name):
    result = _parity(report, "forward")["forward"][name]
    assert result["shape"][0] == result["shape"][1]
    assert result["max_abs_diff"] < 1e-4 + 1e-4 * result["max_abs"], result
