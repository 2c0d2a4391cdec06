"""Sweep planning without child processes: the grid, point identity, the TOML file, what
--resume skips, and the CLI's input errors."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rigbench.cli import app
from rigbench.errors import UsageError
from rigbench.experiments import devices as experiment_devices
from rigbench.experiments.sweep import load_sweep_file, plan_sweep, spec_key, sweep, sweep_spec
from rigbench.fingerprint import this_machine_identity
from rigbench.spec import MeasureOptions, Result, TrialSpec
from rigbench.store import Store
from rigbench.sweep_spec import SweepSpec

EXAMPLE = Path(__file__).parents[2] / "examples" / "sweep.toml"


@pytest.fixture(autouse=True)
def _cpu_only(monkeypatch):
    """Device listing normally asks torch in a child process; here the CPU is the machine."""
    monkeypatch.setattr(experiment_devices, "framework_devices", lambda framework: ["cpu"])


def test_grid_is_the_product_each_point_once():
    grid = plan_sweep(SweepSpec(workloads=["mlp"], batch_sizes=[8, 16, 8], threads=[1, 2],
                                compile=[False, True], quick=True))
    labels = [s.label() for s in grid]
    assert len(grid) == 2 * 2 * 2  # batch 8 listed twice is one point
    assert labels[:4] == ["mlp torch cpu b8 fp32 t1", "mlp torch cpu b8 fp32 t1 compile",
                          "mlp torch cpu b8 fp32 t2", "mlp torch cpu b8 fp32 t2 compile"]
    assert len({spec_key(s) for s in grid}) == 8
    assert all(s.measure == MeasureOptions.quick() for s in grid)


def test_compile_modes_are_an_axis_and_on_is_the_default_mode():
    """`--compile off,on,reduce-overhead`: "on" and "default" are one point (torch.compile's
    default mode), each mode its own point, labelled with its name."""
    from rigbench.cli.common import parse_compile

    settings = parse_compile(["off,on", "reduce-overhead,DEFAULT"], "--compile")
    assert settings == ["off", "default", "reduce-overhead", "default"]
    grid = plan_sweep(SweepSpec(workloads=["mlp"], batch_sizes=[8], compile=settings, quick=True))
    assert [s.label() for s in grid] == ["mlp torch cpu b8 fp32", "mlp torch cpu b8 fp32 compile",
                                         "mlp torch cpu b8 fp32 compile reduce-overhead"]
    with pytest.raises(UsageError, match="--compile-mode takes a torch.compile mode .*got 'off'"):
        parse_compile(["off"], "--compile-mode", switches=False)


def test_frameworks_are_an_axis_of_the_grid_and_of_a_run(tmp_path):
    """`framework` takes one name or a list (a TOML file's key and --framework alike): each
    framework gets every other point; the same list in `run` plans one trial per framework."""
    from rigbench.experiments.plan import plan_run

    grid = plan_sweep(SweepSpec(workloads=["mlp"], batch_sizes=[8, 16], framework=["torch", "jax"], quick=True))
    assert [(s.framework, s.batch_size) for s in grid] == [("torch", 8), ("torch", 16), ("jax", 8), ("jax", 16)]
    path = tmp_path / "f.toml"
    path.write_text('workloads = ["mlp"]\nframework = "jax"\n')
    assert [s.framework for s in plan_sweep(load_sweep_file(path))] == ["jax"]
    specs = plan_run(["mlp", "cnn"], ["cpu"], frameworks=["torch", "jax", "torch"], quick=True)
    assert [(s.workload, s.framework) for s in specs] == [
        ("mlp", "torch"), ("mlp", "jax"), ("cnn", "torch"), ("cnn", "jax")]
    with pytest.raises(UsageError, match="unknown framework 'mxnet'"):
        plan_run(["mlp"], ["cpu"], frameworks=["torch", "mxnet"])


def test_empty_lists_mean_the_run_defaults():
    (point,) = plan_sweep(SweepSpec(workloads=["cnn"], quick=True))
    assert (point.batch_size, point.precision, point.threads, point.lr, point.compile,
            point.channels_last) == (64, "fp32", None, None, "off", False)  # cnn's quick batch


def test_point_identity_includes_measurement_and_ignores_option_order():
    a = TrialSpec(workload="resnet", workload_options={"depth": 20, "width": 1}, batch_size=8)
    b = TrialSpec(workload="resnet", workload_options={"width": 1, "depth": 20}, batch_size=8)
    assert spec_key(a) == spec_key(b)
    c = a.model_copy(update={"measure": MeasureOptions(min_steps=20)})
    assert spec_key(a) != spec_key(c)


def test_toml_file_keys_flags_override_and_errors_name_key_and_file(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('workloads = "mlp"\nbatch_sizes = [8, 16]\nmemory_limit = "1GiB"\n'
                    'compile = [false, true]\n')
    spec = load_sweep_file(path, {"batch_sizes": [32]})
    assert spec.workloads == ["mlp"] and spec.batch_sizes == [32]
    assert spec.memory_limit == 2**30 and spec.compile == ["off", "default"]  # a file from before the modes
    path.write_text('workloads = "mlp"\ncompile = ["on", "reduce-overhead"]\n')
    assert load_sweep_file(path).compile == ["default", "reduce-overhead"]

    path.write_text('workloads = ["mlp"]\nbatch_size = [8]\n')
    with pytest.raises(UsageError, match=r"s\.toml: unknown key 'batch_size': the keys are workloads"):
        load_sweep_file(path)
    path.write_text('batch_sizes = [8, 0]\n')
    with pytest.raises(UsageError, match=r"s\.toml: key 'batch_sizes'\[1\]: .*greater than or equal to 1"):
        load_sweep_file(path)
    path.write_text('precisions = ["fp64"]\n')
    with pytest.raises(UsageError, match=r"key 'precisions'\[0\]"):
        load_sweep_file(path)
    path.write_text('memory_limit = "lots"\n')
    with pytest.raises(UsageError, match="key 'memory_limit'.*not a size"):
        load_sweep_file(path)
    # the limits --memory-limit refuses: a string without a unit, one below the floor (in bytes too)
    path.write_text('memory_limit = "1.5"\n')
    with pytest.raises(UsageError, match="key 'memory_limit'.*has no unit"):
        load_sweep_file(path)
    for tiny in ('"1KiB"', "1024"):
        path.write_text(f"memory_limit = {tiny}\n")
        with pytest.raises(UsageError, match="key 'memory_limit'.*must be at least 64MiB"):
            load_sweep_file(path)
    path.write_text("memory_limit = 1073741824\n")
    assert load_sweep_file(path).memory_limit == 2**30
    path.write_text('batch_sizes = [8\n')
    with pytest.raises(UsageError, match="not valid TOML"):
        load_sweep_file(path)
    with pytest.raises(UsageError, match="cannot read --config"):
        load_sweep_file(tmp_path / "missing.toml")
    with pytest.raises(UsageError, match="key 'steps'"):
        sweep_spec({"steps": 1})


def test_example_file_is_valid_and_plans_eight_points():
    grid = plan_sweep(load_sweep_file(EXAMPLE))
    assert len(grid) == 8
    assert {(s.workload, s.batch_size, s.threads) for s in grid} == {
        (w, b, t) for w in ("mlp", "cnn") for b in (32, 128) for t in (1, 2)}


class Planned(Exception):
    """Raised by a test's on_plan to end a sweep before it starts a child."""


def _stored(store, spec, status="ok", run_id="old"):
    store.add_result(Result(run_id=run_id, created_at="t", spec=spec, status=status))


def _planned_resume(grid, db):
    """What `sweep --resume` plans for `grid` (pending, skipped), stopped before any child runs."""
    seen = {}

    def stop_before_any_child(pending, skipped):
        seen.update(pending=pending, skipped=skipped)
        raise Planned

    with pytest.raises(Planned):
        sweep(grid, db=db, resume=True, on_plan=stop_before_any_child)
    return seen["pending"], seen["skipped"]


def test_resume_skips_exactly_the_stored_points_whatever_their_status(tmp_path):
    db = str(tmp_path / "s.db")
    store = Store(db)
    store.add_run("old", "t", "test", this_machine_identity())
    grid = plan_sweep(SweepSpec(workloads=["mlp"], batch_sizes=[8, 16, 32], quick=True))
    _stored(store, grid[0])
    _stored(store, grid[2], status="oom")
    _stored(store, grid[2])  # a point stored twice (e.g. by two `run`s) is still one point
    _stored(store, grid[1].model_copy(update={"measure": MeasureOptions()}))  # other protocol
    pending, skipped = _planned_resume(grid, db)
    assert pending == [grid[1]]
    assert [(r.spec.batch_size, r.status) for r in skipped] == [(8, "ok"), (32, "oom")]


def test_a_sweep_runs_the_trials_of_one_warm_server_together(tmp_path):
    """Threads x frameworks over two workloads: four servers (framework, thread variables), and
    in grid order every trial would start one (two are kept). The sweep runs each server's
    trials in a row, groups in order of their first pending point, grid order within; a resumed
    point stays out."""
    db = str(tmp_path / "s.db")
    grid = plan_sweep(SweepSpec(workloads=["mlp", "cnn"], framework=["torch", "jax"], threads=[1, 2], quick=True))
    assert [(s.workload, s.framework, s.threads) for s in grid][:4] == [
        ("mlp", "torch", 1), ("mlp", "torch", 2), ("mlp", "jax", 1), ("mlp", "jax", 2)]
    store = Store(db)
    store.add_run("old", "t", "test", this_machine_identity())
    _stored(store, grid[0])
    pending, _ = _planned_resume(grid, db)
    assert [(s.workload, s.framework, s.threads) for s in pending] == [
        ("mlp", "torch", 2), ("cnn", "torch", 2), ("mlp", "jax", 1), ("cnn", "jax", 1),
        ("mlp", "jax", 2), ("cnn", "jax", 2), ("cnn", "torch", 1)]
    switches = sum(a.framework != b.framework or a.threads != b.threads for a, b in zip(pending, pending[1:]))
    assert switches == 3  # one server start per group: 4 instead of 7


def test_resume_leaves_another_machines_points_to_run(tmp_path):
    """A fleet's shared database: machine B's stored point is not machine A's measurement."""
    db = str(tmp_path / "s.db")
    store = Store(db)
    store.add_run("here", "t", "test", this_machine_identity())
    store.add_run("there", "t", "test", {**this_machine_identity(), "hostname": "node-b"})
    grid = plan_sweep(SweepSpec(workloads=["mlp"], batch_sizes=[8, 16], quick=True))
    _stored(store, grid[0], run_id="there")
    _stored(store, grid[1], run_id="here")
    pending, skipped = _planned_resume(grid, db)
    assert pending == [grid[0]] and [r.run_id for r in skipped] == ["here"]


def test_resume_with_everything_stored_runs_nothing(tmp_path):
    db = str(tmp_path / "s.db")
    store = Store(db)
    store.add_run("old", "t", "test", this_machine_identity())
    grid = plan_sweep(SweepSpec(workloads=["mlp"], batch_sizes=[8, 16], quick=True))
    for spec in grid:
        _stored(store, spec)
    outcome = sweep(grid, db=db, resume=True)
    assert outcome.run_id is None and outcome.results == [] and len(outcome.skipped) == 2
    assert [r.spec for r in outcome.grid_results()] == grid
    assert len(store.list()) == 2


def test_cli_dry_run_and_input_errors(tmp_path):
    runner = CliRunner()
    db = str(tmp_path / "d.db")
    store = Store(db)
    store.add_run("old", "t", "test", this_machine_identity())
    grid = plan_sweep(SweepSpec(workloads=["mlp"], batch_sizes=[8], threads=[1], quick=True))
    _stored(store, grid[0])
    args = ["sweep", "mlp", "-d", "cpu", "-b", "8,16", "--threads", "1", "--quick", "--db", db]
    res = runner.invoke(app, args + ["--dry-run", "--resume"])
    assert res.exit_code == 0, res.output
    assert "mlp torch cpu b8 fp32 t1" in res.output and "skip" in res.output
    assert "1 of 2 points already have a stored result" in res.output
    assert "--resume would skip them and run 1" in res.output
    assert len(store.list()) == 1  # nothing ran

    for bad, message in [(["--compile", "maybe"], "--compile takes off, on or a torch.compile mode (default, reduce-overhead"),
                         (["--batch-size", "0"], "--batch-size must be at least 1"),
                         (["--precision", "fp8"], "--precision must be"),
                         (["--config", str(tmp_path / "none.toml")], "cannot read --config")]:
        res = runner.invoke(app, args + bad + ["--dry-run"])
        assert res.exit_code == 2 and message in res.output, (bad, res.output)


def test_a_sweep_can_vary_the_process_count(monkeypatch):
    monkeypatch.setattr("rigbench.experiments.plan.chosen_devices", lambda framework, devices, default: ["cpu"])
    grid = plan_sweep(SweepSpec(workloads=["mlp"], batch_sizes=[32], processes=[1, 2], quick=True))
    assert sorted((s.world_size, s.batch_size) for s in grid) == [(1, 32), (2, 32)]
    assert SweepSpec(processes=2).processes == [2]  # one value in a file is a list of one


def test_a_long_sweep_says_its_estimate_and_asks_first(tmp_path, monkeypatch):
    # A 10,000-point sweep used to start at once, without a word about how long it would take.
    from rigbench.cli import sweep as sweep_cli
    from rigbench.experiments.sweep import TRIAL_OVERHEAD_S, estimate

    started: list[int] = []
    monkeypatch.setattr(sweep_cli, "_sweep_with_progress", lambda grid, db, resume: started.append(len(grid)) or 1 / 0)
    db = str(tmp_path / "d.db")
    lrs = ",".join(f"0.{i:03d}" for i in range(1, 101))  # 100 x 100 = 10,000 points
    args = ["sweep", "mlp", "-d", "cpu", "-b", ",".join(str(b) for b in range(1, 101)), "--lr", lrs, "--db", db]
    grid = plan_sweep(SweepSpec(workloads=["mlp"], devices=["cpu"], batch_sizes=list(range(1, 101)),
                                lrs=[i / 1000 for i in range(1, 101)]))
    guess = estimate(grid)
    # the default protocol: 0.5 s warm-up + 2 s timing + the start overhead, each; 600 s timeout each
    assert guess.trials == 10_000 and guess.least_s == pytest.approx(10_000 * (2.5 + TRIAL_OVERHEAD_S))
    assert guess.most_s == pytest.approx(10_000 * 600.0)

    monkeypatch.setattr(sweep_cli, "_interactive", lambda: True)
    res = CliRunner().invoke(app, args, input="n\n")
    assert res.exit_code == 1 and started == []
    assert "sweep: 10000 trials to run, at least about 15:16:40" in res.output
    assert "Start it?" in res.output and "not started; nothing was run or stored" in res.output
    assert Store(db).list() == []

    res = CliRunner().invoke(app, [*args, "--yes"])  # --yes: no question, the sweep starts
    assert "Start it?" not in res.output and started == [10_000]
    monkeypatch.setattr(sweep_cli, "_interactive", lambda: False)  # a script is never asked
    res = CliRunner().invoke(app, args)
    assert "Start it?" not in res.output and started == [10_000, 10_000]


def test_a_sweep_stopped_before_any_point_finished_prints_no_table_and_no_stored_in(tmp_path, monkeypatch):
    """Ctrl-C during the first trial printed an empty table and "0 of 4 grid points have a result
    (0 from earlier runs). Stored in ... (run ...)." on stdout, beside stderr's "nothing was stored"."""
    from rigbench.cli import sweep as sweep_cli
    from rigbench.experiments.sweep import SweepOutcome

    monkeypatch.setattr(sweep_cli, "_sweep_with_progress", lambda grid, db, resume: SweepOutcome(
        None, "sqlite:///x.db", grid, interrupted=True, stopped=grid[0]))  # no run: none was written
    args = ["sweep", "mlp", "-d", "cpu", "--quick", "-b", "8,16", "--db", str(tmp_path / "i.db")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 130 and res.stdout == ""
    assert "no trial had finished: nothing was stored" in res.stderr
    assert "; 2 grid points left. Resume with: rigbench " in res.stderr  # (sys.argv: pytest's here)
    assert "result of an earlier run" not in res.stderr  # nothing was stored before
    as_json = CliRunner().invoke(app, [*args, "--json"])  # stdout stays one JSON object
    assert as_json.exit_code == 130
    assert json.loads(as_json.stdout) == {"run_id": None, "db": "sqlite:///x.db", "grid_points": 2, "skipped": 0,
                                          "ran": 0, "interrupted": True, "results": []}


def test_an_interrupted_re_measurement_says_resume_would_skip_the_points_stored_before(tmp_path, monkeypatch):
    """A sweep without --resume measures every point again; interrupted, it said only "Resume with:
    ... --resume", which skips every point with a stored result, so it would have re-measured none of
    those stored by an earlier run."""
    from rigbench.cli import sweep as sweep_cli
    from rigbench.experiments.sweep import SweepOutcome

    db = str(tmp_path / "again.db")
    store = Store(db)
    store.add_run("old", "t", "test", this_machine_identity())
    grid = plan_sweep(SweepSpec(workloads=["mlp"], devices=["cpu"], batch_sizes=[8, 16, 32], quick=True))
    for spec in grid[:2]:  # b8 and b16 were measured before; b8 again now, then Ctrl-C during b16
        _stored(store, spec)
    again = Result(run_id="r1", created_at="t", spec=grid[0], status="ok")
    monkeypatch.setattr(sweep_cli, "_sweep_with_progress", lambda grid, db, resume: SweepOutcome(
        "r1", "sqlite:///x.db", grid, results=[] if resume else [again], interrupted=True,
        stopped=grid[2] if resume else grid[1]))
    args = ["sweep", "mlp", "-d", "cpu", "--quick", "-b", "8,16,32", "--db", db]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 130
    assert res.stderr.rstrip().endswith(
        "--resume (1 of the points left has a result of an earlier run, which --resume counts as done and skips: "
        "to measure it again, run without --resume)")
    resumed = CliRunner().invoke(app, [*args, "--resume"])  # resuming: every point left is unstored, no note
    assert resumed.exit_code == 130 and "earlier run" not in resumed.stderr


def test_the_estimate_takes_what_this_machines_earlier_trial_of_a_configuration_took(tmp_path, monkeypatch):
    """On an H200, GPT-2 small's trials took 18-60 s (starting, compiling) where the estimate
    said 3 s beyond the windows each: a configuration this machine ran before now counts what
    that trial took beyond its own windows, whatever protocol it was timed with; another
    machine's trial counts for nothing."""
    from rigbench.cli import sweep as sweep_cli
    from rigbench.experiments.sweep import SERVER_START_S, TRIAL_OVERHEAD_S, earlier_trials, estimate
    from rigbench.metrics import Metrics

    db = str(tmp_path / "e.db")
    store = Store(db)
    store.add_run("here", "t", "test", this_machine_identity())
    store.add_run("there", "t", "test", {**this_machine_identity(), "hostname": "node-b"})
    grid = plan_sweep(SweepSpec(workloads=["mlp"], devices=["cpu"], batch_sizes=[8, 16, 32]))  # 2.5 s windows
    quick = grid[0].model_copy(update={"measure": MeasureOptions.quick()})  # b8, timed another way
    windows = quick.measure.warmup_seconds + quick.measure.min_seconds
    for spec, run_id, took in ((quick, "here", windows + 40.0), (grid[1], "there", 99.0), (grid[0], "here", None)):
        store.add_result(Result(run_id=run_id, created_at="t", spec=spec, status="ok", metrics=Metrics(trial_s=took)))
    # a trial that ended in an oom stopped early: it says nothing of how long one takes
    store.add_result(Result(run_id="here", created_at="t", spec=grid[1], status="oom", metrics=Metrics(trial_s=0.5)))
    # b32 timed 1,000 steps of 30 ms (`--steps 1000`) after a 1 s warm-up whose first step took 0.8 s:
    # 3 s to start, so 34 s in all, of which 3 + 0.8 carry over, not the 30 s of timing
    long = Metrics(trial_s=34.0, warmup_s=1.0, first_step_s=0.8, steps_measured=1000, step_time_ms_mean=30.0)
    store.add_result(Result(run_id="here", created_at="t", spec=grid[2], status="ok", metrics=long))
    earlier = earlier_trials(store, grid)
    assert earlier[grid[0].config_key()].metrics.trial_s == pytest.approx(windows + 40.0)  # no trial_s: not a time
    guess = estimate(grid, earlier)
    assert guess.from_history == 2
    # and one server start for torch, which this sweep pays again (its earlier trials may have reused one)
    assert guess.least_s == pytest.approx((2.5 + 40.0) + (2.5 + TRIAL_OVERHEAD_S) + (2.5 + 3.8) + SERVER_START_S)
    monkeypatch.setattr(sweep_cli, "_sweep_with_progress", lambda grid, db, resume: 1 / 0)
    res = CliRunner().invoke(app, ["sweep", "mlp", "-d", "cpu", "-b", "8,16,32", "--db", db])
    assert "sweep: 3 trials to run, at least about 0:00:56 (" in res.output  # 42.5 + 5.5 + 6.3 + 1.9 = 56.2
    assert "or what this machine's earlier trial of the same configuration took, for 2 of them" in res.output


def test_a_trial_stores_how_long_it_took_on_the_parents_clock(tmp_path):
    from rigbench.runner.session import run_trials
    from tests.conftest import quick_spec

    store = Store(str(tmp_path / "t.db"))
    store.add_run("r", "t", "test", this_machine_identity())
    [result] = run_trials([quick_spec("mlp")], store, "r").results
    stored = store.get(result.id)
    windows = quick_spec("mlp").measure.warmup_seconds + quick_spec("mlp").measure.min_seconds
    assert stored.status == "ok" and stored.metrics.trial_s > windows  # start, build, count beyond the windows


def test_the_bar_counts_trials_and_says_when_it_does_not_know_how_many_yet():
    # "checking the database ━━━ 0/None" before the plan was known
    from rich.progress import MofNCompleteColumn

    from rigbench.cli.sweep import _bar

    bar = _bar()
    task = bar.add_task("checking the database", total=None, eta="-")
    counted = [column for column in bar.columns if isinstance(column, MofNCompleteColumn)]
    assert len(counted) == 1 and str(counted[0].render(bar.tasks[task])) == "0/?"
    bar.update(task, total=4, completed=1)
    assert str(counted[0].render(bar.tasks[task])) == "1/4"


def test_a_sweep_stopped_before_any_result_names_no_run(tmp_path, monkeypatch):
    """A run is written with its first result (Store.add_run(deferred=True)): a sweep interrupted
    before any trial ended named its run id in `--json` and the library's outcome, a run that
    `results list --run` would not find."""
    from rigbench.experiments import execute
    from rigbench.experiments import sweep as sweep_module

    grid = plan_sweep(SweepSpec(workloads=["mlp"], batch_sizes=[8, 16], quick=True))
    ended: list[Result] = []
    monkeypatch.setattr(sweep_module, "run", lambda pending, **_: execute.RunOutcome(
        "r9", "sqlite:///x.db", list(ended), True, pending[len(ended)]))
    assert sweep(grid, db=str(tmp_path / "s.db")).run_id is None
    ended.append(Result(run_id="r9", created_at="t", spec=grid[0], status="ok"))
    stopped = sweep(grid, db=str(tmp_path / "s.db"))
    assert stopped.run_id == "r9" and stopped.interrupted and stopped.results == ended
