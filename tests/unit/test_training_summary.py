import pytest

from rigbench.analysis.training import train_summary
from rigbench.spec import EpochRecord


def ep(n, acc, train_s=10.0, eval_s=1.0, steps=100, input_s=0.0, copy_s=0.0):
    return EpochRecord(epoch=n, steps=steps, train_loss=1.0 / n, accuracy=acc, train_seconds=train_s,
                       eval_seconds=eval_s, input_seconds=input_s, copy_seconds=copy_s)


def test_time_to_target_sums_training_time_only_up_to_the_first_hit():
    epochs = [ep(1, 0.50, 12.0), ep(2, 0.61, 10.0), ep(3, 0.58, 11.0), ep(4, 0.70, 9.0)]
    s = train_summary(epochs, batch_size=32, target_accuracy=0.60)
    assert s["epochs_to_target"] == 2
    assert s["seconds_to_target"] == pytest.approx(22.0)  # 12 + 10, evaluation excluded
    assert s["final_accuracy"] == 0.70 and s["best_accuracy"] == 0.70
    assert s["accuracy_per_epoch"] == [0.50, 0.61, 0.58, 0.70]
    assert s["train_seconds"] == pytest.approx(42.0) and s["eval_seconds"] == pytest.approx(4.0)
    assert s["samples_per_s"] == pytest.approx(400 * 32 / 42.0)
    assert s["epoch_seconds"] == pytest.approx(10.5)


def test_target_never_reached_and_no_target():
    epochs = [ep(1, 0.3), ep(2, 0.4)]
    s = train_summary(epochs, 16, 0.9)
    assert s["epochs_to_target"] is None and s["seconds_to_target"] is None
    assert train_summary(epochs, 16, None)["seconds_to_target"] is None


def test_input_and_copy_shares_and_no_accuracy_workloads():
    epochs = [ep(1, None, train_s=8.0, input_s=2.0, copy_s=1.0), ep(2, None, train_s=12.0, input_s=3.0, copy_s=1.0)]
    s = train_summary(epochs, 8, 0.5)
    assert s["input_fraction"] == pytest.approx(5 / 20) and s["copy_fraction"] == pytest.approx(2 / 20)
    assert s["best_accuracy"] is None and s["epochs_to_target"] is None


def test_no_epochs():
    assert train_summary([], 8, None)["epochs"] == 0


def test_gan_and_autoencoder_losses_reach_the_json_row_and_progress_line():
    from rigbench.reports.terminal import one_line_outcome
    from rigbench.spec import Metrics, Result, TrainOptions, TrialSpec

    epochs = [EpochRecord(epoch=1, steps=10, train_loss=3.1, train_seconds=5.0, eval_seconds=0.0,
                          extra={"loss_d": 1.2, "loss_g": 1.9})]
    spec = TrialSpec(workload="dcgan", batch_size=16, train=TrainOptions(dataset="digits", epochs=1))
    r = Result(run_id="r", created_at="t", spec=spec, status="ok", epoch_records=epochs,
               metrics=Metrics(**train_summary(epochs, 16, None)))
    assert r.row()["final_extra"] == {"loss_d": 1.2, "loss_g": 1.9}
    assert r.row()["final_accuracy"] is None
    assert one_line_outcome(r) == "ok: 1 epochs in 5.0 s, loss_d 1.2, loss_g 1.9"
