"""The framework-free drivers every adapter shares: the training loop (`training.py`), the
learning-rate range test (`lr_range.py`) and the calibration (`calibration.py`).

Each drives small typed primitives that an adapter supplies (a `frameworks/base.DataTrainer` from `build`, the
`base.CalibrationKernels` of `calibration_kernels`), so the rules
(epochs, evaluation, divergence, schedules and smoothing, matmul sizes, copy buffers,
repetitions) are written once for every framework. Nothing here imports a framework.
"""
