"""Keras 3 code shared by the `tensorflow`, `keras-jax` and `keras-torch` adapters: one model
code (models.py), the loss, data and optimiser tables (step.py), the trainer skeleton
(trainer.py) and the training and lr-find loops (training.py, lr_range.py). Not an adapter
itself: each adapter binds it to its backend. Every submodule imports keras, whose backend is
fixed at its first import (KERAS_BACKEND, set by the adapter's `environment`)."""
