"""rigbench: measure how well this machine trains neural networks.

Importing this package needs only the core dependencies; frameworks (torch, tensorflow,
jax) are imported inside their adapters, in the child process that runs a trial.
"""

__version__ = "0.1.0"
