"""How TensorFlow says it ran out of memory (the contract's `is_oom`). tensorflow is imported
inside the function, so the adapter's registry can load this module without it."""

from __future__ import annotations

#: Texts of TensorFlow errors that mean an allocation failed: the allocators' own words (the
#: GPU's BFC allocator, XLA's, and the CPU allocator's, which may surface as other error types).
_OOM_TEXTS = ("resource_exhausted", "resource exhausted", "out of memory", "oom when allocating",
              "failed to allocate", "can't allocate memory")


def is_oom(exc: BaseException) -> bool:
    """True for tf.errors.ResourceExhaustedError, MemoryError, and TensorFlow errors whose text
    reports an allocation failure."""
    if isinstance(exc, MemoryError):
        return True
    import tensorflow as tf

    if isinstance(exc, tf.errors.ResourceExhaustedError):
        return True
    text = str(exc).lower()
    return isinstance(exc, tf.errors.OpError) and any(t in text for t in _OOM_TEXTS)
