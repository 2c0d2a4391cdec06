import math

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
    assert one_line_outcome(r) == "ok: 1 epoch in 5.0 s, loss_d 1.2, loss_g 1.9"  # recommend's loader epoch: not "1 epochs"
    two = [*epochs, epochs[0].model_copy(update={"epoch": 2})]
    r2 = r.model_copy(update={"epoch_records": two, "metrics": Metrics(**train_summary(two, 16, None))})
    assert one_line_outcome(r2) == "ok: 2 epochs in 10.0 s, loss_d 1.2, loss_g 1.9"


def lm(n, eval_loss, train_s=10.0):
    return EpochRecord(epoch=n, steps=50, train_loss=eval_loss + 0.1, eval_loss=eval_loss, train_seconds=train_s,
                       eval_seconds=1.0)


def test_a_language_model_reaches_a_target_loss_and_reads_as_perplexity_and_bits():
    epochs = [lm(1, 3.0, 12.0), lm(2, 2.2, 10.0), lm(3, 2.4, 11.0)]
    s = train_summary(epochs, 32, None, target_loss=2.3, language_model=True, byte_level=True)
    assert (s["epochs_to_target"], s["seconds_to_target"]) == (2, pytest.approx(22.0))  # 12 + 10
    assert s["eval_loss_per_epoch"] == [3.0, 2.2, 2.4]
    assert (s["final_eval_loss"], s["best_eval_loss"], s["target_loss"]) == (2.4, 2.2, 2.3)
    assert s["perplexity"] == pytest.approx(math.exp(2.4))  # of the last epoch, as the loss is
    assert s["bits_per_byte"] == pytest.approx(2.4 / math.log(2))
    assert s["final_accuracy"] is None
    # word-level tokens: no bits per byte; a classifier: a held-out loss but no perplexity
    assert "bits_per_byte" not in train_summary(epochs, 32, None, language_model=True)
    plain = train_summary(epochs, 32, None)
    assert plain["final_eval_loss"] == 2.4 and "perplexity" not in plain


def test_both_targets_must_be_reached_and_a_missed_loss_target_is_none():
    epochs = [EpochRecord(epoch=1, steps=1, train_loss=1.0, eval_loss=0.5, accuracy=0.8, train_seconds=5.0,
                          eval_seconds=1.0),
              EpochRecord(epoch=2, steps=1, train_loss=1.0, eval_loss=0.4, accuracy=0.9, train_seconds=5.0,
                          eval_seconds=1.0)]
    assert train_summary(epochs, 8, 0.85, target_loss=0.6)["epochs_to_target"] == 2
    assert train_summary(epochs, 8, None, target_loss=0.3)["epochs_to_target"] is None
    # a loss past exp's range (a run that learnt nothing, diverging) still gives a finite figure
    assert train_summary([lm(1, 1000.0)], 8, None, language_model=True)["perplexity"] == pytest.approx(math.exp(700))
