"""What the terminal says about a finished trial: a failure's reason on its progress line
(issue 11: a damaged image's `unsupported` was explained only by `results show`), and the lr
a trial used, the workload's default included."""

from rigbench.reports.terminal import compile_lines, one_line_outcome, setup_label, train_table
from rigbench.spec import EpochRecord, LrFindOptions, Metrics, Result, TrainOptions, TrialSpec
from rigbench.workloads import WORKLOADS


def result(status="ok", error=None, **spec_fields) -> Result:
    spec = TrialSpec(**{"workload": "mlp", "batch_size": 16, **spec_fields})
    return Result(run_id="r", created_at="t", spec=spec, status=status, error=error)


def test_an_unsupported_trial_says_why_on_its_progress_line():
    reason = "/data/cats/3.jpg is not a readable PNG or JPEG image (image file is truncated)"
    assert one_line_outcome(result("unsupported", reason)) == f"unsupported ({reason})"


def test_a_crash_shows_the_last_line_of_its_traceback_cut_to_size():
    error = "Traceback (most recent call last):\n  File \"x.py\", line 1\nRuntimeError: " + "x" * 500
    line = one_line_outcome(result("crash", error))
    assert line.startswith("crash (RuntimeError: xxx") and line.endswith("...)")
    assert len(line) < 260


#: The end of a TensorFlow rank's error when its peer died in the all-reduce, as stored on the dev VM
#: (tests/integration/test_data_parallel_tf.py's killed-rank trial, rank 0, shortened).
TF_COLLECTIVE_ERROR = (
    'Traceback (most recent call last):\n  File "/x/protocol.py", line 79, in _agreed\n'
    "tensorflow.python.framework.errors_impl.UnavailableError: Graph execution error:\n\n"
    "Detected at node allgather/CollectiveGatherV2 defined at (most recent call last):\n"
    '  File "<frozen runpy>", line 198, in _run_module_as_main\n\n'
    '  File "/x/parallel.py", line 93, in most\n\n'
    "Collective ops is aborted by: failed to connect to all addresses; last error: UNKNOWN: "
    "ipv4:127.0.0.1:33877: Failed to connect to remote host: Connection refused\n"
    "Additional GRPC error information from remote target /job:worker/replica:0/task:1 while calling "
    "/tensorflow.WorkerService/RecvBuf:\n"
    ':UNKNOWN:Error received from peer  {grpc_status:14, grpc_message:"failed to connect"}\n'
    "The error could be from a previous operation. Restart your program to reset.\n"
    "\t [[{{node allgather/CollectiveGatherV2}}]] [Op:__inference_most_627]")


def test_a_tensorflow_op_error_is_the_line_that_says_what_happened_not_its_graph_node():
    line = one_line_outcome(result("crash", TF_COLLECTIVE_ERROR))
    assert line.startswith("crash (Collective ops is aborted by: failed to connect to all addresses;")
    # no blank line before it: the line above the node line
    assert one_line_outcome(result("crash", "UnavailableError: Socket closed\n\t [[{{node a/B}}]] [Op:c]")) == (
        "crash (UnavailableError: Socket closed)")
    assert one_line_outcome(result("crash", "\t [[{{node a/B}}]]")) == "crash ([[{{node a/B}}]])"
    # a whole traceback above the node line, no blank line: its exception line, not "Traceback (...):"
    # (TensorFlow's mlp under --memory-limit 1500MiB showed "crash (Traceback (most recent call last):)")
    traceback = ('Traceback (most recent call last):\n  File "/x/trainer.py", line 120, in run_step\n'
                 "    self.last, parts = self.compiled_step(x, y)\n"
                 "tensorflow.python.framework.errors_impl.AbortedError: Operation received an exception:Status: 5, "
                 "message: could not execute a primitive\n\t [[{{node sequential_1/dense_3_1/BiasAdd}}]] [Op:c]")
    assert one_line_outcome(result("crash", traceback)) == (
        "crash (tensorflow.python.framework.errors_impl.AbortedError: Operation received an exception:Status: 5, "
        "message: could not execute a primitive)")


def test_ok_and_oom_stay_short():
    assert one_line_outcome(result("oom", "CPU out of memory: tried to allocate 2 GiB")) == "oom"
    ok = result()
    ok.metrics = Metrics(samples_per_s=1234.5)
    assert one_line_outcome(ok) == "1,234.5 samples/s"


def test_the_row_and_train_table_say_the_lr_used():
    default = WORKLOADS["mlp"].default_lr
    trained = result(train=TrainOptions(dataset="digits", epochs=1))
    assert trained.spec.lr is None  # the stored spec (and its configuration key) keep "default"
    assert trained.row()["lr"] == default
    assert result(lr=0.5).row()["lr"] == 0.5
    assert result(lr_find=LrFindOptions(dataset="digits")).row()["lr"] is None  # a range test sweeps the lr
    assert result(workload="future_net").row()["lr"] is None  # unknown here: not guessed
    lr_cells = train_table([trained]).cells("lr")
    assert [str(c) for c in lr_cells] == [f"{default:g}"]  # cells are rich Text (printed literally)


def test_setup_label_names_what_sets_trials_apart():
    assert setup_label(result()) == "-"
    assert setup_label(result(threads=4, compile=True, channels_last=True, lr=0.1)) == "t4 compile NHWC lr=0.1"
    assert setup_label(result(lr_find=LrFindOptions(dataset="digits"))) == "lr-find"
    assert setup_label(result(threads=2, compile="reduce-overhead", lr=0.1), shown=("lr",)) == "t2 compile reduce-overhead"


def test_the_train_table_tells_apart_runs_that_differ_only_in_precision_or_compile():
    options = TrainOptions(dataset="digits", epochs=1)
    runs = [result(train=options, lr=0.05), result(train=options, precision="bf16", compile="reduce-overhead", lr=0.05)]
    table = train_table(runs)
    assert [str(c) for c in table.cells("prec")] == ["fp32", "bf16"]
    # the lr has its own column, and every run in this table is a training run
    assert [str(c) for c in table.cells("setup")] == ["-", "compile reduce-overhead"]


def test_a_compiled_training_run_sets_its_first_epoch_beside_the_later_ones():
    """Epoch 1 carries the compilation (13.95 s against 0.72 s on the dev VM's mlp): the line
    keeps a user from reading the run's mean as the compiled step's speed."""
    def trained(compile, seconds):
        r = result(train=TrainOptions(dataset="digits", epochs=len(seconds)), compile=compile)
        r.id = 7
        r.epoch_records = [EpochRecord(epoch=i + 1, steps=22, train_loss=0.5, train_seconds=s, eval_seconds=0.1)
                           for i, s in enumerate(seconds)]
        return r

    assert compile_lines([trained("reduce-overhead", [13.95, 0.7, 0.74])]) == [
        "trial 7 (compile reduce-overhead): epoch 1 trained in 13.95 s, compilation included; "
        "later epochs in 0.72 s each (mean)"]
    assert compile_lines([trained("off", [0.9, 0.7]), trained("default", [14.0])]) == []  # eager; one epoch


def test_an_interrupt_says_exactly_what_was_kept():
    from rigbench.cli.interrupts import kept_text
    from rigbench.spec import Result, TrainOptions, TrialSpec

    train = TrialSpec(workload="mlp", device="cpu", batch_size=64, kind="train",
                      train=TrainOptions(dataset="digits", epochs=10))
    # Ctrl-C before the first epoch ended: nothing stored, and no "Stored in" pretending otherwise
    assert kept_text([], 2, "training run", train, "db (run r)") == (
        "interrupted (Ctrl-C); no training run had finished: nothing was stored; "
        "mlp torch cpu b64 fp32 was stopped and not stored (no epoch had finished); 1 not started")
    speed = TrialSpec(workload="mlp", device="cpu", batch_size=64)
    done = Result(id=7, run_id="r", created_at="t", spec=speed, status="ok")
    assert kept_text([done], 3, "trial", speed.model_copy(update={"batch_size": 8}), "db (run r)") == (
        "interrupted (Ctrl-C); 1 of 3 trials finished and was stored in db (run r); "
        "mlp torch cpu b8 fp32 was stopped and not stored; 1 not started")
    # a result the database could not take went to the spool: kept, not stored
    spooled = done.model_copy(update={"id": None})
    assert kept_text([done, spooled], 2, "trial", None, "db (run r)") == (
        "interrupted (Ctrl-C); 2 of 2 trials finished: 1 stored in db (run r), 1 kept in the spool "
        "(`rigbench results flush` stores them)")


def test_the_closing_line_tells_stored_from_spooled_results():
    from rigbench.cli.common import stored_text
    from rigbench.spec import Result, TrialSpec

    done = Result(id=7, run_id="r", created_at="t", spec=TrialSpec(workload="mlp", batch_size=64), status="ok")
    assert stored_text([done], "sqlite:///x.db", "r", None) == "Stored in sqlite:///x.db (run r)."
    text = stored_text([done, done.model_copy(update={"id": None})], "sqlite:///x.db", "r", "x.db")
    assert text.startswith("Stored 1 of 2 results in sqlite:///x.db (run r); 1 (id -) could not be stored")
    assert "`rigbench results flush --db x.db` stores them" in text


def test_the_next_step_names_a_stored_trial_id_that_runs_when_copied():
    # a literal `rigbench results show ID` was copied by new users and refused as a typo
    from rigbench.cli.common import show_hint
    from rigbench.spec import Result, TrialSpec

    done = Result(id=7, run_id="r", created_at="t", spec=TrialSpec(workload="mlp", batch_size=64), status="ok")
    assert show_hint([done], None) == "rigbench results show 7"
    assert show_hint([done, done.model_copy(update={"id": 8})], "/tmp/a b.db") == (
        "rigbench results show 7 --db '/tmp/a b.db' (or any id of the table)")
    spooled = done.model_copy(update={"id": None})
    assert show_hint([spooled, done.model_copy(update={"id": 9})], None) == "rigbench results show 9"
    assert show_hint([spooled], None) == ""  # nothing stored: no trial to show


def test_an_interrupt_swallowed_by_a_finaliser_is_sent_again(monkeypatch):
    # Seen in CI: SIGTERM's KeyboardInterrupt landed in a weakref callback during garbage
    # collection, where Python ignores exceptions, and the sweep ran on to exit 0.
    import signal
    import types

    from rigbench.cli import interrupts

    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(interrupts.os, "kill", lambda pid, sig: sent.append((pid, sig)))
    monkeypatch.setitem(interrupts._received, "signum", int(signal.SIGTERM))
    monkeypatch.setattr(interrupts, "REDELIVER_S", 0.0)
    interrupts._redeliver(types.SimpleNamespace(exc_type=KeyboardInterrupt))
    for thread in [t for t in interrupts.threading.enumerate() if isinstance(t, interrupts.threading.Timer)]:
        thread.join(5)  # sent from another thread, after the finaliser has returned
    assert sent == [(interrupts.os.getpid(), signal.SIGTERM)]
    passed: list[object] = []
    monkeypatch.setattr(interrupts.sys, "__unraisablehook__", passed.append)
    other = types.SimpleNamespace(exc_type=ValueError)
    interrupts._redeliver(other)  # any other ignored exception: the usual hook, nothing sent
    assert passed == [other] and len(sent) == 1


def test_the_run_table_separates_thousands_in_every_figure():
    """A slow CPU step read "1549.99" beside samples/s's "1,564" in the same table."""
    from rich.console import Console

    from rigbench.reports.terminal import results_table

    r = result().model_copy(update={"id": 6, "metrics": Metrics(
        samples_per_s=5.16, step_time_ms_median=1549.99, rss_peak_mib=12345.0, allocator_peak_mib=2048.0)})
    from rigbench.cli.sweep import _sweep_table

    for table, figures in ((results_table([r]), ("1,549.99", "12,345", "2,048")),
                           (_sweep_table([r], "r"), ("1,549.99", "12,345"))):
        console = Console(width=200, record=True, markup=False)
        console.print(table)
        [row] = [line for line in console.export_text().splitlines() if line.lstrip().startswith("6 ")]
        assert all(figure in row for figure in figures), row
