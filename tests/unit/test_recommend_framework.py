"""The recommendation's framework line (analysis/recommend_framework.py) on synthetic Results:
whether another framework's stored trials of the same network train it faster on the device."""

from rigbench.analysis import recommend as rules
from rigbench.experiments.recommend import stored_recommendation
from tests.unit.test_recommend_logic import trial


def framework_line(lines):
    return next((line for line in lines if line.decision == "framework"), None)


def test_a_framework_clearly_faster_at_the_recommended_batch_is_named_with_its_ratio():
    # the fourth H200 lease's cnn fp32 at b128: JAX 153,393 against torch's 51,381 samples/s
    torch = [trial(128, 51_381.0, device="cuda:0")]
    others = [trial(128, 153_393.0, device="cuda:0", framework="jax"),
              trial(128, 40_000.0, device="cuda:0", framework="tensorflow")]
    lines = rules.recommend(torch, ["cuda:0"], {}, "sgd", 50_000, others=others)
    line = framework_line(lines)
    assert line.value == "jax" and line.numbers["faster"] == "jax"
    assert line.text.startswith("framework: jax trains it 2.99x as fast as torch on cuda:0 at b128 "
                                "(153,393.0 against 51,381.0 samples/s, fp32, stored trials)")
    assert "`--framework jax` recommends for it (all: jax x2.99, tensorflow x0.78)" in line.text
    decisions = [line.decision for line in lines]
    assert decisions.index("energy") < decisions.index("framework") < decisions.index("epoch_seconds")


def test_a_lead_within_noise_or_a_slower_framework_leaves_the_framework_as_it_is():
    torch = [trial(64, 100.0)]  # intervals of +-5%: 100 [95-105]
    close = rules.recommend(torch, ["cpu"], {}, "sgd", 1_000, others=[trial(64, 104.0, framework="jax")])
    line = framework_line(close)
    assert line.value == "torch" and line.numbers["faster"] is None
    assert line.text == ("framework: torch, no other framework measured is clearly faster on cpu at b64 "
                         "(jax x1.04; jax's lead is within noise)")
    slower = framework_line(rules.recommend(torch, ["cpu"], {}, "sgd", 1_000, others=[trial(64, 50.0, framework="jax")]))
    assert slower.value == "torch" and slower.text.endswith("(jax x0.50)")


def test_the_nearest_batch_both_measured_stands_in_and_none_without_a_common_batch():
    torch = [trial(16, 100.0), trial(64, 180.0), trial(256, 195.0)]  # the knee: b64
    jax = [trial(16, 300.0, framework="jax"), trial(256, 400.0, framework="jax")]
    line = framework_line(rules.recommend(torch, ["cpu"], {}, "sgd", 1_000, others=jax))
    assert line.value == "jax" and "3.00x as fast as torch on cpu at b16 (the batch both measured nearest to b64)" in line.text
    assert framework_line(rules.recommend(torch, ["cpu"], {}, "sgd", 1_000,
                                          others=[trial(32, 500.0, framework="jax")])) is None
    # other devices' and data-parallel trials do not count
    elsewhere = [trial(64, 900.0, device="cuda:0", framework="jax"), trial(64, 900.0, framework="jax", world_size=2)]
    assert framework_line(rules.recommend(torch, ["cpu"], {}, "sgd", 1_000, others=elsewhere)) is None


def test_the_reports_recommendation_reads_the_other_frameworks_of_the_same_results():
    results = [trial(64, 100.0), trial(64, 250.0, framework="jax")]
    line = framework_line(stored_recommendation(results, "mlp"))
    assert line.value == "jax" and "2.50x as fast as torch" in line.text
    jax_side = framework_line(stored_recommendation(results, "mlp", framework="jax"))
    assert jax_side.value == "jax" and jax_side.text.endswith("(torch x0.40)")


def test_recommend_reads_the_other_frameworks_of_this_machine_only(tmp_path):
    """`rigbench recommend --no-run` on a store: this machine's JAX trial makes the line; another
    machine's faster one does not (a recommendation is one machine's)."""
    from rigbench.experiments.recommend import recommend
    from rigbench.fingerprint import machine_fingerprint
    from rigbench.store import Store

    db = str(tmp_path / "fw.db")
    store = Store(db)
    store.add_run("here", "2026-01-01T00:00:00+00:00", "rigbench run mlp --framework torch,jax", machine_fingerprint())
    store.add_run("there", "2026-01-02T00:00:00+00:00", "rigbench run mlp --framework jax", {"hostname": "elsewhere"})
    for r in (trial(64, 100.0).model_copy(update={"run_id": "here"}),
              trial(64, 120.0, framework="jax").model_copy(update={"run_id": "here"}),
              trial(64, 900.0, framework="jax").model_copy(update={"run_id": "there"})):
        store.add_result(r.model_copy(update={"id": None}))
    outcome = recommend("mlp", devices=["cpu"], batch_sizes=[64], run_missing=False, db=db)
    line = framework_line(outcome.lines)
    assert line.value == "jax" and "1.20x as fast as torch on cpu at b64 (120.0 against 100.0" in line.text
