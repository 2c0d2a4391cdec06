import contextlib
import functools
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# Tests run on pytest-xdist workers (pyproject's addopts). Each worker and the trials it starts
# would otherwise take a thread per core, and OpenMP threads that outnumber the cores spin
# against each other: a 12 s torch test took 63 s with two workers. Share the cores out.
if os.environ.get("PYTEST_XDIST_WORKER"):
    _workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    _threads = str(max(1, (os.cpu_count() or 1) // _workers))
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, _threads)

from rigbench.spec import MeasureOptions, TrialSpec
from tests.databases import fresh_database

# Bytecode is cached even where the environment says not to (PYTHONDONTWRITEBYTECODE, as on
# this project's VMs): otherwise every `rigbench` the suite starts compiles the modules it
# imports from source again (0.4 s of a results listing's 1 s, 1.8 s of a quick trial's 6 s),
# and pytest rewrote every test module's asserts in each run. Only the cache folders change
# (__pycache__, ignored by git); children inherit the setting through the environment.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# pytest imports readline, which exports COLUMNS=80 and LINES=24 into the process's C environment
# (not os.environ, so delenv below saw nothing): every `rigbench` a test started laid its tables
# out 80 wide, where a pipe gets 200 (cli/console.py), and compare's header read "B/A" for
# "B/A [95% CI]". Setting and deleting through os.environ unsets them there too.
for _var in ("COLUMNS", "LINES"):
    if _var not in os.environ:
        os.environ[_var] = ""
        del os.environ[_var]

#: A worker's share of the cores, as above: also the threads of a child that asks for a count of
#: its own (tests/contract/keras_child.py), or two workers' children spin against each other.
WORKER_THREADS = max(1, (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))

def skip_without(*modules: str) -> None:
    """Skips the calling module or test unless every one of `modules` is installed, without
    importing them (pytest.importorskip imports: `keras` alone starts TensorFlow, 5 s in each
    worker's collection, and a worker that has imported TensorFlow must not fork)."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}", allow_module_level=True)


#: The store's backends: the fixture `db_url` runs a test on each (tests/databases.py).
BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(scope="session", autouse=True)
def _compiler_cache(tmp_path_factory):
    """torch.compile's cache (/tmp/torchinductor_<user> by default) outlives the run and grew to
    3.2 GB over this machine's suites. Each session gets its own under pytest's base temp, which
    pytest prunes to the last three runs; every run then compiles cold, as on CI's fresh machine.
    (Only its precompiled header, 149 MB, stays where torch always puts it.)"""
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path_factory.mktemp("torchinductor"))


@pytest.fixture(scope="session")
def _cpu_cache(tmp_path_factory) -> bytes:
    """This machine's cached CPU identity (hw/cpu.py's cpu.json), found once per worker. py-cpuinfo
    asks in a child process of its own: 1 s of CPU each time, 94 times in one suite, when every
    test's fresh cache folder had to find it again (tests/unit/test_fingerprint.py tests the
    cache itself, in folders of its own)."""
    from rigbench.hw import cpu

    folder = tmp_path_factory.mktemp("cpu-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RIGBENCH_CACHE_DIR", str(folder))
        cpu.cpu_identity()
    path = folder / cpu.CPU_CACHE_FILE
    return path.read_bytes() if path.exists() else b""


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path_factory, monkeypatch, _cpu_cache):
    """Never write into the user's real database, cache or spool during tests. The cache starts
    with the CPU's identity in it, as on a machine that has run rigbench before."""
    base = tmp_path_factory.mktemp("rigbench-home")
    monkeypatch.setenv("RIGBENCH_DB", str(base / "default.db"))
    monkeypatch.setenv("RIGBENCH_CACHE_DIR", str(base / "cache"))
    monkeypatch.setenv("RIGBENCH_SPOOL_DIR", str(base / "spool"))
    # tables into a pipe are 200 wide unless COLUMNS says otherwise (cli/common.py): a shell's
    # exported COLUMNS must not narrow them; a test that wants a width passes its own
    monkeypatch.delenv("COLUMNS", raising=False)
    if _cpu_cache:
        from rigbench.hw import cpu

        (base / "cache").mkdir()
        (base / "cache" / cpu.CPU_CACHE_FILE).write_bytes(_cpu_cache)


@pytest.fixture(params=BACKENDS)
def db_url(request, tmp_path):
    """The URL of a new, empty database, once per backend: a SQLite file in the test's folder,
    then a database of its own on the PostgreSQL test server (skipped when none is set up)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    with fresh_database() as url:
        yield url


def quick_spec(workload="mlp", batch_size=8, **measure) -> TrialSpec:
    """A short trial on the CPU; `measure` overrides MeasureOptions.quick()."""
    extra = {k: measure.pop(k) for k in ("lr", "workload_options") if k in measure}
    return TrialSpec(workload=workload, device="cpu", batch_size=batch_size, threads=1,
                     measure=MeasureOptions.quick(**measure), **extra)


@functools.cache
def framework_rss_mib(workload: str) -> float:
    """What a CPU trial of `workload` holds before its memory cap is set (runner/child.
    apply_memory_limit: the framework imported, the model counted), as the child itself
    reports it when a probe is capped at 64 MiB (the smallest --memory-limit taken). About 305 MiB for mlp with CPU torch; 520-660 MiB
    with a CUDA build, measured before torch._dynamo (73 MiB here) was imported first: memory-limit
    tests set their caps over it."""
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [sys.executable, "-m", "rigbench", "run", workload, "-d", "cpu", "--quick", "--memory-limit", "64MiB",
             "--json", "--db", os.path.join(tmp, "probe.db")],
            capture_output=True, text=True, timeout=240, check=False)
    match = re.search(r"alone takes \((\d+) MiB\)", proc.stdout)
    assert match, proc.stdout + proc.stderr
    return float(match.group(1))


#: Tests that take more than a few seconds on 2 cores (measured with `pytest --durations`), as
#: node-id prefixes: a folder, a module, or one test. Collected as `slow`, so the day-to-day
#: subset `pytest -m "not slow"` (README) stays within about three minutes; CI runs everything.
#: Whole modules go in when a module-scoped fixture (a child process per framework) is the cost.
SLOW = (
    "tests/e2e/",  # the `rigbench` command in subprocesses, each starting a framework
    "tests/integration/",  # real child processes for every status, migration and fault
    "tests/contract/test_keras_tensorflow.py",  # one child per Keras framework: its workloads, its parity
    "tests/contract/test_keras_jax.py",
    "tests/contract/test_keras_torch.py",
    "tests/contract/test_workloads.py::test_parameters_match_the_analytic_count",
    "tests/contract/test_workloads.py::test_adapter_flop_counter_matches_the_analytic_figure",
    "tests/unit/test_jax_parity.py",
    "tests/unit/test_transformer_parity.py",  # JAX jits gpt and vit per case: 6 s of tests, 10 s with imports
    "tests/unit/test_torch_training.py",
    "tests/unit/test_jax_adapter.py::test_mlp_learns_digits",
    "tests/unit/test_jax_adapter.py::test_loader_mode_same_seed_same_run",
    "tests/unit/test_jax_adapter.py::test_huge_lr_diverges_in_epoch_one",
    "tests/unit/test_jax_adapter.py::test_dcgan_reports_both_losses",
    "tests/unit/test_jax_adapter.py::test_lr_find_ramps_and_stops",
    "tests/unit/test_torch_variants.py::test_compile_wraps_the_model_in_its_mode_still_trains_and_says_what_it_did",
    "tests/unit/test_torch_models.py::test_dcgan_each_update_lowers_its_loss",
    "tests/unit/test_trackers.py::test_counts_descendants_of_the_tracked_process",
    "tests/unit/test_trackers.py::test_tracks_busy_process_cpu_and_rss",
    "tests/unit/test_contention.py::test_a_trial_beside_processes_that_take_every_core_is_busy",
    "tests/unit/test_api.py::test_core_imports_and_works_without_torch",
    "tests/unit/test_stored_text.py::test_a_trial_of_an_unknown_workload_is_kept_and_never_fatal",
    "tests/unit/test_step_pairs.py::test_ddp_pairs_interleave_in_lockstep_and_keep_the_replicas_identical",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(SLOW):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def held_lock(tmp_path):
    """Another process holding the write lock of a SQLite file (`BEGIN IMMEDIATE`; `EXCLUSIVE`
    blocks reads too), as a script or a second rigbench would: call it with the file; released
    at the test's end."""
    holders = []

    def hold(path: Path, mode: str = "IMMEDIATE") -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
             f"c.execute('BEGIN {mode}'); print('locked', flush=True); sys.stdin.read()", str(path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "locked"
        holders.append(proc)
        return proc

    yield hold
    for proc in holders:
        proc.kill()
        proc.wait()


def with_ctrl_c() -> None:
    """Popen `preexec_fn` for a process a test will Ctrl-C: SIGINT back to its default action.
    A shell starts background jobs with SIGINT ignored, the ignore is inherited, and Python then
    installs no KeyboardInterrupt handler: a suite run with `&` would see Ctrl-C do nothing."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


#: A process that spins for `seconds` at the lowest priority (nice 19): it takes whatever CPU the
#: rest leave idle, which counts as other processes' use, yet yields to the suite's other worker.
_SPIN = "import os, time\nos.nice(19)\nend = time.time() + {seconds}\nwhile time.time() < end: pass\n"


@contextlib.contextmanager
def busy_machine(seconds: float = 120.0) -> Iterator[None]:
    """One low-priority spinning process per logical core for the `with` block (a busy machine,
    analysis/contention.py), killed when it ends."""
    spinners = [subprocess.Popen([sys.executable, "-c", _SPIN.format(seconds=seconds)])
                for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(0.3)  # the spinners are running
        yield
    finally:
        for p in spinners:
            p.kill()
            p.wait()
