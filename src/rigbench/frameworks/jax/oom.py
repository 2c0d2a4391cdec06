"""How JAX says it ran out of memory (the contract's `is_oom`). jax is imported inside the
function, so the adapter's registry can load this module without jax."""

from __future__ import annotations

#: Texts of XLA runtime errors that mean an allocation failed: the status code XLA gives
#: every out-of-memory (GPU BFC allocator and CPU alike), and the allocators' own words.
_OOM_TEXTS = ("resource_exhausted", "out of memory", "failed to allocate", "can't allocate memory")


def is_oom(exc: BaseException) -> bool:
    """True for MemoryError and XLA runtime errors that report exhausted memory."""
    if isinstance(exc, MemoryError):
        return True
    from jax.errors import JaxRuntimeError

    text = str(exc).lower()
    return isinstance(exc, JaxRuntimeError) and any(t in text for t in _OOM_TEXTS)
