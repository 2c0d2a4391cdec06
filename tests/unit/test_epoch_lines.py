"""The epoch line a training child writes, read back by the parent for its progress, and the
progress `rigbench train` shows with it (a line per epoch where stderr is not a terminal)."""

from rigbench import api
from rigbench.cli.common import _run_with_progress
from rigbench.runner.epoch_lines import TAIL_BYTES, EpochPace, epoch_line, finished_epochs, newest_phase, phase_line
from rigbench.spec import EpochRecord, Metrics, Result, TrainOptions, TrialSpec


def record(epoch, train_loss, **fields):
    return EpochRecord(epoch=epoch, steps=10, train_loss=train_loss, train_seconds=1.0, eval_seconds=0.1, **fields)


def test_the_epoch_lines_are_read_back_from_the_end_of_the_file(tmp_path):
    path = tmp_path / "stderr.txt"
    assert finished_epochs(path) == []  # not written yet: no progress, no error
    path.write_text("W1127 some framework warning\n")
    assert finished_epochs(path) == []
    lines = [epoch_line(record(e, 2.0 / e, accuracy=0.3 * e, eval_loss=1.0)) for e in range(1, 4)]
    path.write_text("\n".join(["noise"] + lines + ["a warning after it"]) + "\n")
    # every epoch past the last one told, oldest first, with its held-out accuracy
    assert finished_epochs(path, after=1) == [(2, "train loss 1, held-out accuracy 60.0%"),
                                              (3, "train loss 0.6667, held-out accuracy 90.0%")]
    # a long stderr (a traceback, thousands of warnings) is read from its end only
    path.write_text("x" * (10 * TAIL_BYTES) + "\n" + epoch_line(record(41, 0.0123)) + "\n")
    assert finished_epochs(path) == [(41, "train loss 0.0123")]


def test_an_epoch_line_carries_the_held_out_figure_the_workload_has(tmp_path):
    path = tmp_path / "stderr.txt"
    cases = [(record(2, 1.5, eval_loss=1.25), "train loss 1.5, held-out loss 1.25"),  # a language model
             (record(2, 1.4, extra={"loss_d": 0.69, "loss_g": 0.71}), "train loss 1.4, loss_d 0.69, loss_g 0.71")]
    for rec, figures in cases:  # ... and a GAN, which has no held-out figure: its part losses
        path.write_text(epoch_line(rec) + "\n")
        assert finished_epochs(path) == [(2, figures)]


def test_the_pace_says_the_time_so_far_and_an_eta_from_the_epochs_seen():
    pace = EpochPace(planned=10, started=100.0)
    # the first epoch: only the elapsed time (start-up included) to go by, 30 s an epoch
    assert pace.text(1, "train loss 0.5", now=130.0) == "epoch 1/10, train loss 0.5, 0:00:30 elapsed, ETA 0:04:30"
    # from then on the pace since the first epoch heard of: 5 s an epoch, 7 epochs left
    assert pace.text(3, "train loss 0.3", now=140.0) == "epoch 3/10, train loss 0.3, 0:00:40 elapsed, ETA 0:00:35"
    assert pace.text(10, "train loss 0.1", now=175.0) == "epoch 10/10, train loss 0.1, 0:01:15 elapsed"


def test_train_into_a_file_says_each_finished_epoch_on_stderr(tmp_path, monkeypatch, capsys):
    """`rigbench train ... 2>log` was silent until its end: the epochs showed only in the bar,
    which is not drawn where stderr is not a terminal. stdout stays clean for --json."""
    spec = TrialSpec(workload="mlp", batch_size=32, train=TrainOptions(dataset="digits", epochs=2))
    said = ["epoch 1/2, train loss 0.9, held-out accuracy 80.0%, 0:00:03 elapsed, ETA 0:00:01",
            "epoch 2/2, train loss 0.4, held-out accuracy 91.0%, 0:00:04 elapsed"]

    def run(specs, db, on_trial_start, on_trial_end, on_trial_progress):
        on_trial_start(0, specs[0])
        for text in said:
            on_trial_progress(0, text)
        done = Result(run_id="r1", created_at="2026-01-01T00:00:00+00:00", spec=specs[0], status="ok",
                      metrics=Metrics(epochs=2, train_seconds=1.0, final_accuracy=0.91))
        on_trial_end(0, done)
        return api.RunOutcome("r1", "sqlite:///x", [done], False)

    monkeypatch.setattr(api, "run", run)
    _run_with_progress([spec], str(tmp_path / "t.db"))
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert lines[:2] == [f"  {spec.label()}: {text}" for text in said]
    assert lines[2].startswith(f"  {spec.label()}: ok: 2 epochs")


def test_the_newest_phase_is_read_back_unless_an_epoch_came_after_it(tmp_path):
    path = tmp_path / "stderr.txt"
    assert newest_phase(path) is None  # not written yet: no progress, no error
    path.write_text(f"{phase_line('starting torch')}\nW1127 a warning\n{phase_line('warm-up (the first step took 1.2 s)')}\n")
    assert newest_phase(path) == "warm-up (the first step took 1.2 s)"
    with open(path, "a") as file:  # a line being written is not read until it is whole
        file.write("rigbench: phase: timing: at le")
    assert newest_phase(path) == "warm-up (the first step took 1.2 s)"
    path.write_text(f"{phase_line('epoch 1/3')}\n{epoch_line(record(1, 0.5))}\n")
    assert newest_phase(path) is None  # the epoch tells how far it has got
    path.write_text("x" * (10 * TAIL_BYTES) + "\n" + phase_line("step 40/100, lr 0.001, smoothed loss 2.3") + "\n")
    assert newest_phase(path) == "step 40/100, lr 0.001, smoothed loss 2.3"


def test_a_run_of_several_trials_into_a_file_says_each_trials_place_and_phase(tmp_path, monkeypatch, capsys):
    """`rigbench run ... 2>log` said nothing while a trial ran (an lstm's 101 s) and no line said
    which of how many trials it was; each phase is now a line, with the trial's place."""
    specs = [TrialSpec(workload=w, batch_size=8) for w in ("mlp", "cnn")]

    def run(specs, db, on_trial_start, on_trial_end, on_trial_progress):
        results = []
        for i, spec in enumerate(specs):
            on_trial_start(i, spec)
            on_trial_progress(i, "warm-up (the first step took 0.5 s)")
            results.append(Result(run_id="r1", created_at="2026-01-01T00:00:00+00:00", spec=spec, status="ok",
                                  metrics=Metrics(samples_per_s=100.0)))
            on_trial_end(i, results[-1])
        return api.RunOutcome("r1", "sqlite:///x", results, False)

    monkeypatch.setattr(api, "run", run)
    _run_with_progress(specs, str(tmp_path / "t.db"))
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert lines[0] == f"  [1/2] {specs[0].label()}: warm-up (the first step took 0.5 s)"
    assert lines[1].startswith(f"  [1/2] {specs[0].label()}: 100")
    assert lines[2] == f"  [2/2] {specs[1].label()}: warm-up (the first step took 0.5 s)"
    assert lines[3].startswith(f"  [2/2] {specs[1].label()}: 100") and len(lines) == 4
