"""The GPU paths no CPU run reaches (issue 26): every installed framework's trial on the GPU
with its allocator and NVML memory, data-parallel ranks at world size 1 through each agent
(NCCL for torch) with the pre-run all-reduce check, two CUDA trials in a row (the warm start
must not fork a process that has touched CUDA), and the fused attention kernel of a bf16
transformer in torch, JAX and Keras on JAX.

Marked `gpu` and skipped without CUDA. RIGBENCH_TEST_GPU_DEVICE=cpu runs the same tests on the
CPU (where the GPU-only assertions are left out), so that a dev machine checks them before a
GPU session spends its time on them: `RIGBENCH_TEST_GPU_DEVICE=cpu pytest -m gpu
tests/integration/test_gpu_paths.py`."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

from rigbench.runner.assemble import build_result
from rigbench.runner.launchers import TrackerSettings
from rigbench.runner.session import run_trials
from rigbench.spec import MeasureOptions, TrialSpec
from rigbench.store import Store
from tests.data_parallel import agent_launcher
from tests.integration.test_isolation import run_isolated

DEVICE = os.environ.get("RIGBENCH_TEST_GPU_DEVICE", "cuda:0")
ON_GPU = DEVICE.startswith("cuda")
#: Frameworks that can run here (TensorFlow's CUDA wheel is not on the lent GPU machines).
FRAMEWORKS = [name for name, module in (("torch", "torch"), ("jax", "jax"), ("keras-jax", "keras"),
                                        ("keras-torch", "keras"), ("tensorflow", "tensorflow"))
              if importlib.util.find_spec(module) is not None]
#: A framework with a data-parallel agent (keras-torch has none: its NO_DATA_PARALLEL says why).
PARALLEL = [name for name in FRAMEWORKS if name != "keras-torch"]


def _cuda_present() -> bool:
    if shutil.which("nvidia-smi") is None or importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


pytestmark = [pytest.mark.gpu, pytest.mark.timeout(600),
              pytest.mark.skipif(ON_GPU and not _cuda_present(), reason="needs an NVIDIA GPU")]


def _spec(framework: str, workload: str = "cnn", batch_size: int = 32, **fields) -> TrialSpec:
    return TrialSpec(workload=workload, framework=framework, device=DEVICE, batch_size=batch_size,
                     measure=MeasureOptions.quick(), **fields)


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> dict[str, object]:
    """cnn at batch 32 in every framework, then torch's mlp twice more, the second as CUDA graphs
    (torch.compile reduce-overhead), through the session (warm start, trackers, assembly, the
    store): the stored results by framework, torch's mlp two."""
    store = Store(str(tmp_path_factory.mktemp("gpu") / "gpu.db"))
    store.add_run("gpu", "t", "test", {})
    specs = [_spec(name) for name in FRAMEWORKS] + [_spec("torch", "mlp"),
                                                    _spec("torch", "mlp", compile="reduce-overhead")]
    run_trials(specs, store, "gpu")
    results = [store.get(row.id) for row in store.list(run_id="gpu")]
    return {"by_framework": dict(zip(FRAMEWORKS, results)), "torch_mlp": results[len(FRAMEWORKS):]}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_trial_in_each_framework_runs_on_the_device_with_its_memory_figures(stored, framework):
    result = stored["by_framework"][framework]
    assert result.status == "ok", result.error
    m = result.metrics
    assert m.samples_per_s > 0 and m.steps_measured >= 3
    if ON_GPU:
        assert "cpu" not in (result.device_name or "").lower(), result.device_name
        assert m.allocator_peak_mib and m.allocator_peak_mib > 0, "the framework's allocator peak"
        assert m.gpu_mem_peak_mib and m.gpu_mem_peak_mib >= m.allocator_peak_mib, "NVML counts the allocator's pool"
        # XLA preallocates 75% of the GPU unless told not to (frameworks/jax/devices.py): a
        # figure near 75% of 80 GiB would be the pool, not the trial
        assert m.gpu_mem_peak_mib < 20 * 1024, m.gpu_mem_peak_mib
        assert m.gpu_util_pct_mean is not None


def test_cuda_trials_in_a_row_each_run(stored):
    """A warm start must not fork a server that touched CUDA: each trial still runs."""
    assert [r.status for r in stored["torch_mlp"]] == ["ok", "ok"], [r.error for r in stored["torch_mlp"]]


def test_reduce_overhead_replays_cuda_graphs_and_says_so(stored):
    """The compiled trial's software says what ran: CUDA graphs recorded on the GPU, skipped on a
    CPU; no graph break in the mlp either way."""
    compiled = stored["torch_mlp"][1]
    text = compiled.software["compile"]
    assert text.startswith("torch.compile reduce-overhead: 1 graph, 0 graph breaks; CUDA graphs: "), text
    if ON_GPU:
        recorded = int(text.split("CUDA graphs: ")[1].split(" recorded")[0])
        assert recorded >= 1 and "skipped" not in text, text
        # the graphs' pool holds the step's activations: its peak is no small part of eager's
        # (the allocated peak alone read 77 MiB against 181 for the mlp on an H200, 3 against 163 for cnn)
        eager = stored["torch_mlp"][0].metrics.allocator_peak_mib
        assert compiled.metrics.allocator_peak_mib >= 0.5 * eager, (compiled.metrics.allocator_peak_mib, eager)
    else:
        assert text.endswith("0 recorded, skipped 1 time"), text


@pytest.mark.parametrize("framework", PARALLEL)
def test_one_rank_through_the_data_parallel_agent_with_the_all_reduce_check(framework):
    spec = _spec(framework, "mlp", world_size=1)
    outcome = agent_launcher(framework).launch(spec, TrackerSettings.for_spec(spec))
    [rank] = outcome.reports
    assert rank.status == "ok", rank.error
    sizes = [size for size, _ in rank.allreduce_s]
    assert 4 * rank.params in sizes and all(seconds > 0 for _, seconds in rank.allreduce_s)
    result = build_result(spec, outcome, "gpu-dp")
    assert result.status == "ok" and result.metrics.samples_per_s > 0
    if ON_GPU:
        assert "cpu" not in (rank.device_name or "").lower(), rank.device_name


@pytest.mark.parametrize("framework", [name for name in FRAMEWORKS if name in ("torch", "jax", "keras-jax")])
def test_a_bf16_transformer_records_the_fused_attention_kernel_it_ran(framework):
    """torch's SDPA picks flash or memory-efficient attention at bf16 on an NVIDIA GPU; JAX is
    asked for cuDNN's fused kernel (frameworks/jax/transformers.attention_kernel), Keras on JAX
    takes it itself."""
    spec = _spec(framework, "gpt", batch_size=4, precision="bf16")
    outcome = run_isolated(spec)
    assert outcome.report.status == "ok", outcome.report.error
    kernel = outcome.report.software["attention"]
    if ON_GPU:
        assert any(word in kernel for word in ("flash", "efficient", "cudnn")), kernel
        assert "(cpu)" not in kernel, kernel
    else:  # torch has a flash kernel of its own on the CPU ("flash (cpu)"); cuDNN is NVIDIA's
        assert "cudnn" not in kernel, kernel


@pytest.mark.skipif(not ON_GPU or "jax" not in FRAMEWORKS, reason="XLA's GPU pool: needs JAX on a GPU")
def test_xlas_pool_may_grow_to_nearly_all_the_memory_max_batch_counts_as_the_limit():
    """XLA caps its pool at 75% of the GPU even without preallocation: a JAX max-batch search
    would stop at three quarters of the limit max-batch states while torch's goes on to nearly
    all of it. The adapter's environment lets the pool grow to 95% (frameworks/jax/devices.py)."""
    from rigbench.experiments.devices import devices_info
    from rigbench.frameworks import load_adapter

    [limit] = [dev["memory_bytes"] for dev in devices_info() if dev["id"] == DEVICE]
    env = {**os.environ, **load_adapter("jax").environment(_spec("jax"))}
    code = (f"import jax; d = jax.devices('gpu')[{int(DEVICE.split(':')[1])}]; "
            "print(d.memory_stats()['bytes_limit'])")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    pool = int(done.stdout.split()[-1])
    assert 0.9 * limit <= pool <= limit, (pool, limit)
