"""scikit-learn's 8x8 handwritten digits: 1,797 real images, no download needed.

The pixel values are counts of 0..16 (each 8x8 pixel counts "on" pixels of a 4x4 block of
the original 32x32 bitmap). They are scaled to uint8 0..255 like the other data sets.
"""

from __future__ import annotations

import numpy as np

from rigbench.data.split import stratified_split
from rigbench.errors import UsageError

#: 80/20 split, seed 0; registry.DATASETS["digits"] records the resulting sizes.
TEST_FRACTION = 0.2
SEED = 0


def load_digits_arrays(test_fraction: float = TEST_FRACTION, seed: int = SEED
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train uint8 [N,1,8,8], y_train int64, x_test, y_test), stratified and deterministic."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise UsageError("the digits data set needs scikit-learn: pip install 'rigbench[data]'") from None
    bunch = load_digits()
    images = np.asarray(bunch.images, dtype=np.float64)  # [1797, 8, 8], 0..16
    x = np.clip(np.rint(images * (255.0 / 16.0)), 0, 255).astype(np.uint8)[:, None, :, :]
    y = np.asarray(bunch.target, dtype=np.int64)
    train, test = stratified_split(y, test_fraction, seed)
    return x[train], y[train], x[test], y[test]
