"""Max-batch probes are a kind of their own: never a speed figure for score, compare, recommend,
scaling or the published comparison; old probes (stored as "speed") are recognised by their
timing; recommend still rebuilds max-batch's limit from them."""

import pytest
from pydantic import ValidationError

from rigbench.analysis import recommend as rules
from rigbench.analysis.compare import compare_results
from rigbench.analysis.published import compare_published
from rigbench.analysis.recommend_knobs import rows_at
from rigbench.analysis.scaling import scaling_table
from rigbench.analysis.score import suite_results
from rigbench.analysis.trials import is_full_protocol
from rigbench.experiments.recommend import stored_limit
from rigbench.spec import PROBE_STEPS, MeasureOptions, Metrics, Result, TrainOptions, TrialSpec

MIB = 2**20
TIMES = [0.10, 0.11, 0.09, 0.10, 0.12, 0.10, 0.095]
PROBE_TIMING = MeasureOptions.quick(min_steps=PROBE_STEPS, min_seconds=0.0, memory_limit_bytes=700 * MIB)


def result(rid, batch=64, kind=None, measure=None, times=TIMES, status="ok", rss=None, **spec_fields):
    """A stored-looking ok Result of mlp on the CPU, as fast as its step times say."""
    fields = {"kind": kind} if kind else {}
    spec = TrialSpec(workload="mlp", batch_size=batch, measure=measure or MeasureOptions(), **fields, **spec_fields)
    ok = status == "ok"
    sps = batch / sorted(times)[len(times) // 2]
    metrics = Metrics(samples_per_s=sps if ok else None, samples_per_s_ci=(sps * 0.95, sps * 1.05) if ok else None,
                      steps_measured=len(times) if ok else 0, rss_peak_mib=rss)
    return Result(id=rid, run_id=f"run{rid}", created_at="2026-01-01T00:00:00+00:00", spec=spec, status=status,
                  device_name="cpu name", step_times_s=times if ok else [], metrics=metrics)


def stored_old(r: Result, explicit_speed: bool) -> Result:
    """`r` as an older rigbench stored it: kind absent (v0.1) or "speed" (before kind "probe")."""
    data = r.model_dump(mode="json")
    if explicit_speed:
        data["spec"]["kind"] = "speed"
    else:
        del data["spec"]["kind"]
    return Result.model_validate(data)


def fast_probe(rid, batch=64, **fields):
    """A probe ten times faster than TIMES, timed over as many steps: only its kind keeps it out."""
    return result(rid, batch, kind="probe", measure=PROBE_TIMING, times=[t / 10 for t in TIMES], **fields)


# ---- the kind --------------------------------------------------------------------------------

@pytest.mark.parametrize("explicit_speed", [False, True])
def test_old_probes_are_read_as_probes(explicit_speed):
    old = stored_old(fast_probe(1), explicit_speed)
    assert old.spec.kind == "probe" and not is_full_protocol(old)
    assert old.row()["kind"] == "probe" and old.spec.label() == "mlp torch cpu b64 fp32 probe"
    # a --quick speed trial and a trial of the default protocol stay speed trials
    for measure in (MeasureOptions.quick(), MeasureOptions(), MeasureOptions.quick(min_steps=2, min_seconds=0.1)):
        assert stored_old(result(2, measure=measure), explicit_speed).spec.kind == "speed"
    assert stored_old(result(3, measure=PROBE_TIMING, train=TrainOptions(dataset="digits", epochs=1)),
                      explicit_speed=False).spec.kind == "train"


def test_a_probe_has_no_train_or_lr_find_block():
    with pytest.raises(ValidationError, match="kind 'train' and the train options go together"):
        TrialSpec(kind="probe", workload="mlp", batch_size=8, train=TrainOptions(dataset="digits", epochs=1))
    assert TrialSpec(kind="probe", workload="mlp", batch_size=8, measure=PROBE_TIMING).kind == "probe"


def test_full_protocol_means_speed_trials_quick_ones_included():
    assert is_full_protocol(result(1)) and is_full_protocol(result(2, measure=MeasureOptions.quick()))
    assert not is_full_protocol(fast_probe(3))
    assert not is_full_protocol(result(4, train=TrainOptions(dataset="digits", epochs=1)))


# ---- no consumer takes a probe for a speed figure ---------------------------------------------

@pytest.mark.parametrize("old", [None, False, True])
def test_score_never_picks_a_probe(old):
    probe = fast_probe(9)  # newest, at the suite's batch, default configuration
    if old is not None:
        probe = stored_old(probe, old)
    assert {w: [r.id for r in trials] for w, trials in suite_results([result(1), probe], "cpu").items()} == {"mlp": [1]}
    assert suite_results([probe], "cpu") == {}


def test_compare_never_pairs_probes():
    a, b = [result(1, batch=32), fast_probe(2, batch=64)], [result(3, batch=32), fast_probe(4, batch=64)]
    found = compare_results(a, b, same_machine=True)
    assert [p.key for p in found.pairs] == ["mlp torch cpu b32 fp32"] and not found.only_a and not found.only_b
    found = compare_results([stored_old(fast_probe(5), True)], [stored_old(fast_probe(6), False)], True)
    assert found.pairs == found.only_a == found.only_b == []


def test_recommend_uses_no_probe_as_a_throughput():
    results = [result(1, batch=16), result(2, batch=64), fast_probe(3, batch=256), stored_old(fast_probe(4, batch=512), True)]
    assert list(rules.baseline_by_batch(results, "cpu")) == [16, 64]
    assert rules.decide_device(results, ["cpu"], {}).value == "cpu"
    assert rules.decide_batch(results, "cpu", None).numbers["best_batch"] in (16, 64)
    assert rows_at(results, "cpu", 256) == (None, [])


def test_scaling_and_published_leave_probes_out():
    assert [row.trial_id for row in scaling_table([result(1), fast_probe(2)])] == [1]
    assert scaling_table([fast_probe(3)]) == []
    # the published comparison matches a plain fp32 cnn at the thesis's batch 128; the probe is newer
    speed = result(4, batch=128)
    speed.spec = speed.spec.model_copy(update={"workload": "cnn"})
    probe = speed.model_copy(update={"id": 5, "spec": speed.spec.model_copy(
        update={"kind": "probe", "measure": PROBE_TIMING})})
    found = compare_published([speed, probe], ["yin2020"])
    assert found.matches and {m.ours.id for m in found.matches} == {4}
    assert not compare_published([probe], ["yin2020"]).matches


@pytest.mark.parametrize("old", [None, False, True])
def test_recommend_still_rebuilds_the_limit_from_probes(old):
    probes = [fast_probe(1, batch=256, rss=500.0), fast_probe(2, batch=512, rss=700.0),
              result(3, batch=1024, kind="probe", measure=PROBE_TIMING, status="oom")]
    for p in probes:
        p.run_id = "search"
    if old is not None:
        probes = [stored_old(p, old) for p in probes]
    limit = stored_limit(probes + [result(4, batch=2048)], "cpu")
    # model: 300 MiB + 200/256 MiB per sample; 90% of 700 MiB = 630 MiB -> batch 422 -> 416 (x8)
    assert limit is not None
    assert (limit.largest_ok, limit.smallest_oom, limit.recommended) == (512, 1024, 416)
    assert stored_limit([result(4, batch=2048)], "cpu") is None
