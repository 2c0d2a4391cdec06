"""lr-find on the real `digits` data set in a child process, checked by training with its suggestion."""

import math

import pytest

from rigbench import api
from rigbench.spec import LrFindOptions, MeasureOptions, TrainOptions, TrialSpec
from rigbench.store import Store

pytest.importorskip("torch")
pytest.importorskip("sklearn")
pytestmark = pytest.mark.timeout(300)


def test_lr_find_on_digits_suggests_a_rate_that_trains(tmp_path):
    db = str(tmp_path / "lr.db")
    options = LrFindOptions(dataset="digits", start_lr=1e-5, end_lr=10.0, steps=60)
    spec = TrialSpec(workload="mlp", batch_size=32, threads=1, lr_find=options)
    found = api.run([spec], db=db).results[0]
    assert found.status == "ok", found.error
    curve = found.lr_curve
    stored = Store(db).get(found.id)
    assert stored.lr_curve == curve and stored.metrics.suggested_lr == found.metrics.suggested_lr

    # The ramp is exponential from start_lr: lr_i = 1e-5 * 1e6 ** (i / 59).
    for i, (lr, _, _) in enumerate(curve):
        assert lr == pytest.approx(1e-5 * 1e6 ** (i / 59))
    # The smoothed loss is the bias-corrected moving average of the losses (weight 0.05).
    average = 0.0
    for i, (_, loss, smoothed) in enumerate(curve):
        average = 0.95 * average + 0.05 * loss
        assert smoothed == pytest.approx(average / (1 - 0.95 ** (i + 1)))
    # On digits an lr of 10 diverges: the test stops early, at 4x the minimum smoothed loss.
    smoothed = [p[2] for p in curve]
    assert len(curve) < 60 and smoothed[-1] > 4 * min(smoothed)

    lr = found.metrics.suggested_lr
    assert lr is not None and 1e-5 < lr < 1.0
    train = TrialSpec(workload="mlp", batch_size=32, threads=1, lr=lr, measure=MeasureOptions(timeout_s=280),
                      train=TrainOptions(dataset="digits", epochs=3, download=False))
    trained = api.run([train], db=db).results[0]
    assert trained.status == "ok", trained.error  # it did not diverge
    assert all(math.isfinite(x) for x in trained.loss_curve)
    assert trained.metrics.final_accuracy >= 0.8  # chance is 10%
