"""Keras 3 code shared by the `tensorflow`, `keras-jax` and `keras-torch` adapters: one model
code (models.py), the loss, data and optimiser tables (step.py), the trainer skeleton with its
real-data primitives (trainer.py) and what a Keras-on-a-backend adapter takes from its native
adapter (backend_adapter.py). Not an adapter itself: each adapter binds it to its backend. Every
submodule but backend_adapter imports keras, whose backend is fixed at its first import
(KERAS_BACKEND, set by the adapter's `environment`)."""
