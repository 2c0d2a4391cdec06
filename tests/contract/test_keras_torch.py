"""The Keras-family adapter contract (tests/contract/keras_family.py, keras_networks.py) for keras-torch,
and benchmarks/step_pairs.py's bare Keras loop, which its child runs too (keras_child.BARE_STEP_FRAMEWORK)."""

from tests.contract.keras_family import *  # noqa: F403 - the checks and their `report` fixture
from tests.contract.keras_networks import *  # noqa: F403 - the networks against torch's

FRAMEWORK = "keras-torch"


def test_the_keras_bare_model_is_compiled_over_the_trainers_layers(report):
    """compile() belongs to a model, so step_pairs' Keras loop compiles a model of its own over
    the trainer's layers: its steps must move the trainer's variables (tests/unit/test_step_pairs.py
    checks the rest of step_pairs; this one runs in the keras-torch child, which starts Keras on
    torch anyway)."""
    assert report["bare_step_moves_the_trainers_variables"] is True
