"""The Keras-family adapter contract (tests/contract/keras_family.py, keras_networks.py) for keras-torch."""

from tests.contract.keras_family import *  # noqa: F403 - the checks and their `report` fixture
from tests.contract.keras_networks import *  # noqa: F403 - the networks against torch's

FRAMEWORK = "keras-torch"
