"""The Keras-family adapter contract (tests/contract/keras_family.py) for keras-jax."""

from tests.contract.keras_family import *  # noqa: F403 - the checks and their `report` fixture

FRAMEWORK = "keras-jax"
