"""How torch says it ran out of memory (the contract's `is_oom`). torch is imported inside the
function, so the adapter's registry can load this module without torch."""

from __future__ import annotations

#: Substrings of RuntimeError messages that mean the allocator ran out of memory. The CPU
#: allocator under RLIMIT_AS says e.g. "[enforce fail at alloc_cpu.cpp:127] err == 0.
#: DefaultCPUAllocator: can't allocate memory: you tried to allocate 2147483648 bytes."
_OOM_TEXTS = ("out of memory", "can't allocate memory", "defaultcpuallocator")



def is_oom(exc: BaseException) -> bool:
    """True for torch's out-of-memory errors, MemoryError and allocator-failure RuntimeErrors."""
    import torch

    oom_types: tuple[type[BaseException], ...] = (MemoryError,)
    for owner, attr in ((torch, "OutOfMemoryError"), (torch.cuda, "OutOfMemoryError")):
        if hasattr(owner, attr):
            oom_types += (getattr(owner, attr),)
    if isinstance(exc, oom_types):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(t in text for t in _OOM_TEXTS)
