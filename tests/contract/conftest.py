"""Shared pieces of the adapter contract suite: the installed frameworks, and per framework
the few things only a test needs to know about it (how to provoke a real out-of-memory error)."""

from __future__ import annotations

import importlib
from collections.abc import Callable

import pytest

from rigbench.frameworks import installed_frameworks, load_adapter
from rigbench.workloads import WORKLOADS
from rigbench.workloads.flops import dcgan_discarded_d_weight_grad_flops

FRAMEWORKS = installed_frameworks()
#: Frameworks on Keras 3, whose backend is fixed at keras' first import: their trials run in one
#: child process per framework (keras_family.py, keras_child.py), never in a pytest worker.
KERAS_FAMILY = [f for f in FRAMEWORKS if f in ("tensorflow", "keras-jax", "keras-torch")]
#: Frameworks whose adapters the suite imports and runs in its own processes.
IN_PROCESS = [f for f in FRAMEWORKS if f not in KERAS_FAMILY]


def _torch_oom() -> BaseException:
    """A real allocation failure: 1 PiB is more than any host can give (malloc refuses it)."""
    torch = importlib.import_module("torch")
    try:
        torch.empty(2**50, dtype=torch.uint8)
    except BaseException as exc:  # noqa: BLE001 - the exception is the point
        return exc
    raise AssertionError("allocating 1 PiB succeeded")


def _torch_oom_examples() -> list[BaseException]:
    torch = importlib.import_module("torch")
    return [
        _torch_oom(),
        # the CPU allocator under RLIMIT_AS (tests/integration/test_isolation.py provokes it for real)
        RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
                     "memory: you tried to allocate 2147483648 bytes. Error code 12 (Cannot allocate memory)"),
        torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
        MemoryError(),
    ]


def _jax_oom_examples() -> list[BaseException]:
    jnp = importlib.import_module("jax.numpy")
    errors = importlib.import_module("jax.errors")
    try:
        jnp.zeros(2**50, jnp.uint8)  # the CPU client refuses 1 PiB: RESOURCE_EXHAUSTED
    except BaseException as exc:  # noqa: BLE001 - the exception is the point
        real = exc
    else:
        raise AssertionError("allocating 1 PiB succeeded")
    return [
        real,
        # the GPU allocator's words (XLA's BFC allocator on CUDA)
        errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2147483648 bytes."),
        MemoryError(),
    ]


#: framework -> out-of-memory exceptions its `is_oom` must recognise (a new adapter adds its own)
OOM_EXAMPLES: dict[str, Callable[[], list[BaseException]]] = {"torch": _torch_oom_examples, "jax": _jax_oom_examples}


@pytest.fixture(scope="module", params=IN_PROCESS)
def adapter(request):
    return load_adapter(request.param)


#: (framework, workload) -> FLOPs per sample by which the framework's step knowingly differs from
#: the analytic figure (workloads/flops.py), with the reason there. The analytic figure stays the
#: one figure of record for MFU in every framework; this only keeps the counter check exact.
FLOP_DIFFERENCES: dict[tuple[str, str], Callable[[dict], float]] = {
    # torch's autograd computes D's weight gradients in the G update and the step discards them;
    # JAX, TensorFlow and the Keras family ask for G's gradients only (jax.vjp,
    # tf.GradientTape.gradient, torch.autograd.grad on G's weights), as the analytic figure counts.
    ("torch", "dcgan"): lambda options: float(dcgan_discarded_d_weight_grad_flops(WORKLOADS["dcgan"].latent_size or 0)),
}

#: Workloads whose loss over a few steps on one tiny batch is noise, not descent: catsdogs' dropout
#: 0.5 before batch norm on two images, at Adam 1e-4. Its third loss was below its first for 3 of
#: 6 seeds in torch and 3 of 6 in jax (seeds 4-9, dev VM): a coin. Their loss must move.
NOISY_LOSS = ("catsdogs",)
