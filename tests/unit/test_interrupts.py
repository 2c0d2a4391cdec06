"""An interrupt (Ctrl-C, or the SIGTERM the CLI turns into one) outside a trial: between two
trials, while one is stored, before a command starts, once its trials are over. Each must keep
what finished, say so in one line and exit 128 + the signal (README). A real signal is sent to
this process; the handlers are restored after each test."""

import os
import signal
import sys
import time

import pytest
import typer

from rigbench.cli import interrupts
from rigbench.errors import UnsupportedError
from rigbench.runner import session
from rigbench.store import Store, spool
from rigbench.store.waiting import WAIT_ENV
from tests.conftest import quick_spec

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGTERM") or sys.platform == "win32", reason="POSIX signals")


@pytest.fixture
def handlers(monkeypatch):
    """The process's signal handlers and interrupt bookkeeping, as they were, after the test."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)
    for key, value in {"signum": int(signal.SIGINT), "got": False, "said": False}.items():
        monkeypatch.setitem(interrupts._received, key, value)
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def _session(tmp_path, monkeypatch, count=3):
    """A store and `count` trials that run without a child (no launcher: each is stored `unsupported`)."""
    monkeypatch.setattr(session, "launcher_for", lambda spec: (_ for _ in ()).throw(UnsupportedError("no launcher")))
    store = Store(str(tmp_path / "s.db"))
    store.add_run("run1", "t", "test", {}, deferred=True)  # as experiments.execute.start_run: written with a result
    return store, [quick_spec(batch_size=8 * (i + 1)) for i in range(count)]


def test_an_interrupt_between_two_trials_ends_the_session_with_what_finished(tmp_path, monkeypatch, handlers):
    # Seen: SIGTERM as a trial's line was printed left run_trials; typer ended it 130, silently.
    store, specs = _session(tmp_path, monkeypatch)

    def ended(index, result):
        raise KeyboardInterrupt

    outcome = session.run_trials(specs, store, "run1", on_trial_end=ended)
    assert outcome.interrupted and outcome.stopped is None
    assert [r.spec.batch_size for r in outcome.results] == [8] == [r.spec.batch_size for r in store.list()]
    assert [(r["id"], r["command"]) for r in store.runs()] == [("run1", "test")]  # with its first result


def test_an_interrupt_before_the_first_result_is_stored_leaves_no_run(tmp_path, monkeypatch, handlers):
    # Seen: `rigbench run` interrupted in start-up said "nothing was stored", yet `rigbench results
    # runs` listed a new run of 0 trials (in a fleet's shared database these piled up).
    store, specs = _session(tmp_path, monkeypatch)
    interrupts.install()
    monkeypatch.setattr(session, "launch_trial", lambda spec, **kw: _sigterm())  # in the first trial's start-up
    outcome = session.run_trials(specs, store, "run1")
    assert outcome.interrupted and outcome.results == [] and outcome.stopped is specs[0]
    assert store.runs() == [] and store.list() == []


def test_an_interrupt_while_a_trial_is_stored_waits_until_it_is_stored_and_counted(tmp_path, monkeypatch, handlers):
    store, specs = _session(tmp_path, monkeypatch)
    interrupts.install()  # SIGTERM is Ctrl-C
    add = store.add_result

    def add_signalled(result):
        os.kill(os.getpid(), signal.SIGTERM)  # arrives mid-store
        time.sleep(0.05)
        return add(result)

    monkeypatch.setattr(store, "add_result", add_signalled)
    outcome = session.run_trials(specs, store, "run1")
    assert outcome.interrupted and outcome.stopped is None and interrupts.exit_code() == 143
    assert [r.spec.batch_size for r in outcome.results] == [8] == [r.spec.batch_size for r in store.list()]
    assert outcome.results[0].id is not None


@pytest.mark.timeout(120)  # without the fix: the whole hour's wait
def test_an_interrupt_while_the_database_is_busy_spools_the_result_instead_of_waiting(tmp_path, monkeypatch,
                                                                                      handlers, held_lock):
    # Seen: Ctrl-C while another process held the SQLite write lock waited out RIGBENCH_DB_WAIT_S
    # (60 s by default) before the command stopped.
    monkeypatch.setenv(WAIT_ENV, "3600")
    monkeypatch.setenv("RIGBENCH_SPOOL_DIR", str(tmp_path / "spool"))
    store, specs = _session(tmp_path, monkeypatch)
    interrupts.install()
    add = store.add_result

    def add_signalled(result):
        os.kill(os.getpid(), signal.SIGTERM)
        return add(result)

    monkeypatch.setattr(store, "add_result", add_signalled)
    held_lock(tmp_path / "s.db")
    outcome = session.run_trials(specs, store, "run1")
    assert outcome.interrupted and [r.id for r in outcome.results] == [None]  # kept in the spool
    [kept] = spool.pending(store.url)
    assert spool.read(kept)[1].spec.batch_size == 8


def _main_exit(monkeypatch, app) -> int:
    import rigbench.cli as cli

    monkeypatch.setattr(cli, "app", app)
    monkeypatch.setattr(sys, "argv", ["rigbench", "go"])
    with pytest.raises(SystemExit) as done:
        cli.main()
    return done.value.code


def _sigterm() -> None:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)  # the interrupt ends this
    raise AssertionError("SIGTERM did not interrupt")


def test_an_interrupt_no_command_handled_exits_128_plus_the_signal_with_one_line(monkeypatch, capsys, handlers):
    # Before the command: typer builds every command before its own KeyboardInterrupt handling
    # (seen: a traceback, and death by SIGINT, for a SIGTERM).
    assert _main_exit(monkeypatch, _sigterm) == 143
    assert capsys.readouterr().err == ("interrupted (SIGTERM) outside a trial: nothing was left half-done, and every "
                                       "result stored before it stays stored (`rigbench results list` shows them)\n")
    # Inside a command that does not handle it (its set-up, the summary after its trials):
    # typer ends it 130 without a word, for SIGTERM too.
    app = typer.Typer()
    app.command("go")(_sigterm)
    app.command("other")(lambda: None)
    assert _main_exit(monkeypatch, app) == 143
    assert capsys.readouterr().err.startswith("interrupted (SIGTERM) outside a trial: ")
    # the listing names the command's database: `rigbench results list` alone read the default one
    monkeypatch.setattr(sys, "argv", ["rigbench", "sweep", "mlp", "--db", "postgresql://u:pw@h/r"])
    assert interrupts.unsaid_exit() == 143
    assert capsys.readouterr().err.endswith("(`rigbench results list --db postgresql://u@h/r` shows them)\n")


def test_a_command_that_said_what_it_kept_is_left_alone(monkeypatch, capsys, handlers):
    def go() -> None:
        try:
            _sigterm()
        except KeyboardInterrupt:
            print("interrupted (SIGTERM); its own line", file=sys.stderr)
            raise interrupts.interrupted_exit() from None

    app = typer.Typer()
    app.command()(go)
    app.command("other")(lambda: None)
    assert _main_exit(monkeypatch, app) == 143
    assert capsys.readouterr().err == "interrupted (SIGTERM); its own line\n"


def test_ctrl_c_while_the_command_imports_is_one_line():
    """Ctrl-C in the second the command's imports take (before main's own handling) printed a
    traceback of 15-30 lines of import machinery; the process still ends by SIGINT (a shell's 130)."""
    import subprocess

    code = ("import os, signal, time\nimport rigbench.cli.starting\n"
            "os.kill(os.getpid(), signal.SIGINT)\ntime.sleep(5)\nimport rigbench.cli\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert done.stderr == "interrupted (Ctrl-C) as rigbench started: nothing was done\n"
    assert done.returncode == -signal.SIGINT
    other = subprocess.run([sys.executable, "-c", "import rigbench.cli.starting\nraise ValueError('kept')"],
                           capture_output=True, text=True, timeout=60)
    assert "Traceback" in other.stderr and other.stderr.endswith("ValueError: kept\n")  # the usual hook


def test_an_interrupted_list_of_training_runs_names_the_command_for_the_rest(monkeypatch):
    """`train --lr 0.01,0.05` stopped during its second run said what was kept and "1 not started",
    and nothing on how to train what was left."""
    from rigbench import api
    from rigbench.spec import Result

    def ended(spec, status="ok"):
        return Result(run_id="r", created_at="t", spec=spec, status=status)

    two = api.plan_train("mlp", "digits", 2, lrs=[0.01, 0.05], devices=["cpu"])
    monkeypatch.setattr(sys, "argv", ["rigbench", "train", "mlp", "--dataset", "digits", "--lr=0.01,0.05",
                                      "--db", "postgresql://u:pw@h/r"])
    assert interrupts.rest_command(two, [ended(two[0])]) == (
        "rigbench train mlp --dataset digits --db postgresql://u@h/r --lr 0.05")
    # a run stopped part-way (its finished epochs stored, status interrupted) is trained again
    assert interrupts.rest_command(two, [ended(two[0], "interrupted")]).endswith(" --lr 0.01,0.05")
    assert interrupts.rest_command(two, [ended(s) for s in two]) is None  # nothing left
    grid = api.plan_train("mlp", "digits", 2, lrs=[0.01, 0.05], batch_sizes=[32, 64], devices=["cpu"])
    monkeypatch.setattr(sys, "argv", ["rigbench", "train", "mlp", "--lr", "0.01,0.05", "-b32", "-b", "64"])
    assert interrupts.rest_command(grid, [ended(s) for s in grid[:2]]) == (  # b32 done: b64's two lrs left
        "rigbench train mlp --lr 0.01,0.05 --batch-size 64")
    assert interrupts.rest_command(grid, [ended(grid[0])]) is None  # three runs left: no one product of lists


def test_a_recommendation_stopped_before_its_first_result_names_no_run(tmp_path, monkeypatch, handlers):
    # its run is written with its first result: none stored, none to name ("run ... measured now")
    from rigbench.experiments.recommend_trials import RecommendOutcome, Session

    store, specs = _session(tmp_path, monkeypatch)
    outcome = RecommendOutcome("mlp", ["cpu"], [])
    run = Session(store, True, outcome, on_note=lambda text: None, on_trial_end=lambda r: None)
    interrupts.install()
    launch = session.launch_trial
    monkeypatch.setattr(session, "launch_trial", lambda spec, **kw: _sigterm())
    run.measure("batch sizes on cpu", "none stored", specs)
    assert outcome.interrupted and outcome.run_id is None and run.new == []
    assert store.runs() == []
    monkeypatch.setattr(session, "launch_trial", launch)  # a trial that ends (stored `unsupported`): the run is named
    store, specs = _session(tmp_path / "again", monkeypatch)
    outcome = RecommendOutcome("mlp", ["cpu"], [])
    run = Session(store, True, outcome, on_note=lambda text: None, on_trial_end=lambda r: None)
    run.measure("batch sizes on cpu", "none stored", specs[:1])
    assert outcome.run_id is not None and [r["id"] for r in store.runs()] == [outcome.run_id]
