"""The transformer workloads' declarations, presets and analytic figures (no framework)."""

from __future__ import annotations

import pytest

from rigbench.errors import UsageError
from rigbench.workloads import WORKLOADS, parse_workload_ref, resolved_options, shaped
from rigbench.workloads.flops import train_flops_per_sample, trainable_params
from rigbench.workloads.transformers import gpt_params, gpt_train_flops


def test_a_preset_sets_its_options_and_an_option_beside_it_wins():
    gpt = WORKLOADS["gpt"]
    assert resolved_options(gpt, {})["layers"] == 2  # the default is tiny
    small = resolved_options(gpt, {"preset": "small"})
    assert (small["layers"], small["heads"], small["width"], small["context"], small["vocab"]) == (12, 12, 768, 1024, 50_304)
    assert resolved_options(gpt, {"preset": "small", "layers": 6})["layers"] == 6
    assert resolved_options(gpt, resolved_options(gpt, {"preset": "medium"})) == resolved_options(gpt, {"preset": "medium"})


def test_shaped_gives_the_batch_shape_of_the_options():
    assert shaped(WORKLOADS["gpt"], {"preset": "small"}).input_shape == (1024,)
    assert shaped(WORKLOADS["gpt"], {"preset": "small"}).vocab == 50_304
    assert shaped(WORKLOADS["vit"], {"preset": "s224"}).input_shape == (3, 224, 224)
    assert shaped(WORKLOADS["mlp"], {}) is WORKLOADS["mlp"]
    for name in ("gpt", "vit"):  # the declared shape is the default preset's
        assert shaped(WORKLOADS[name], {}) == WORKLOADS[name]


def test_gpt2_small_has_nanogpts_parameters_and_flops():
    small = resolved_options(WORKLOADS["gpt"], {"preset": "small"})
    # nanoGPT prints 123.69M: its count leaves out the position embedding (1024 x 768)
    assert gpt_params(small) == 124_475_904 == 123_689_472 + 1024 * 768
    # nanoGPT's estimate_mfu per token: 6 N + 12 L H Q T, N = all parameters but the position
    # embedding; ours leaves out the biases and LayerNorms too, 6 (13 L + 2) d per token
    layers, d, tokens = 12, 768, 1024
    nanogpt = 6 * 123_689_472 + 12 * layers * d * tokens
    assert gpt_train_flops(small) / tokens == nanogpt - 6 * (13 * layers + 2) * d
    assert train_flops_per_sample(WORKLOADS["gpt"], {"preset": "small"}) == gpt_train_flops(small)


def test_vit_presets_have_the_published_sizes():
    # DeiT-Ti 5.7M and DeiT-S 22M at 224 with 1000 classes; here the head has 10
    vit = WORKLOADS["vit"]
    assert trainable_params(vit, resolved_options(vit, {"preset": "ti224"})) == 5_717_416 - 990 * 192 - 990
    assert trainable_params(vit, resolved_options(vit, {"preset": "s224"})) == 22_050_664 - 990 * 384 - 990


@pytest.mark.parametrize("ref,message", [
    # each size option, under 1: gpt:context=0 was told only "a transformer needs positive sizes
    # and a width (128) that its heads (4) divide", naming no option
    *[(f"gpt:{key}={bad}", f"option {key}={bad} of 'gpt' must be a whole number of at least 1")
      for key in ("layers", "heads", "width", "context", "vocab") for bad in (0, -2)],
    *[(f"vit:{key}={bad}", f"option {key}={bad} of 'vit' must be a whole number of at least 1")
      for key in ("layers", "heads", "width", "mlp", "image", "patch") for bad in (0, -2)],
    ("gpt:heads=5", "option heads=5 of 'gpt' must divide width=128: one of 1, 2, 4, 8, 16, 32, 64, 128"),
    ("gpt:width=90", "option heads=4 of 'gpt' must divide width=90: one of 1, 2, 3, 5, 6, 9, 10, 15, 18, 30, 45, 90"),
    # a prime width: its divisors found up to its square root (a loop to 10**9 took minutes)
    ("gpt:width=1000000007,heads=7", "option heads=7 of 'gpt' must divide width=1000000007: one of 1, 1000000007"),
    ("vit:heads=5", "option heads=5 of 'vit' must divide width=192: one of 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, "
                    "64, 96, 192"),
    ("vit:patch=5", "option patch=5 of 'vit' must divide image=32: one of 1, 2, 4, 8, 16, 32"),
    ("vit:image=30", "option patch=4 of 'vit' must divide image=30: one of 1, 2, 3, 5, 6, 10, 15, 30"),
    ("gpt:preset=huge", "option preset=huge of 'gpt' must be one of tiny, small, medium"),
    ("vit:preset=huge", "option preset=huge of 'vit' must be one of tiny, ti32, s32, ti224, s224"),
])
def test_a_shape_the_options_cannot_build_is_refused_up_front_naming_the_option(ref, message):
    with pytest.raises(UsageError) as refused:
        parse_workload_ref(ref)
    assert str(refused.value) == message


def test_a_bad_transformer_option_is_one_line_and_exit_2(tmp_path):
    from typer.testing import CliRunner

    from rigbench.cli import app

    res = CliRunner().invoke(app, ["run", "gpt:context=0", "-d", "cpu", "--quick", "--db", str(tmp_path / "r.db")])
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr == "rigbench: error: option context=0 of 'gpt' must be a whole number of at least 1\n"
    assert not (tmp_path / "r.db").exists()


def test_the_transformers_run_only_when_named():
    from rigbench.experiments.plan import plan_run

    assert {s.workload for s in plan_run(devices=["cpu"])}.isdisjoint({"gpt", "vit"})
    assert [(s.workload, s.workload_options) for s in plan_run(["gpt:preset=small"], devices=["cpu"])] == [
        ("gpt", {"preset": "small"})]


def test_a_workloads_options_survive_the_comma_separated_list():
    from rigbench.units import split_workload_refs

    assert split_workload_refs(["gpt:preset=small,layers=6,vit", "rcnn:width=32,steps=1"]) == [
        "gpt:preset=small,layers=6", "vit", "rcnn:width=32,steps=1"]
    assert split_workload_refs(["mlp,cnn"]) == ["mlp", "cnn"]


def test_activation_memory_grows_with_the_context_linearly_and_through_the_scores_quadratically():
    """gpt tiny in fp32, by hand: per layer 8 T d + 2 T m = 8*64*128 + 2*64*512 = 131,072 values
    and H T^2 = 4*64^2 = 16,384 scores; 2 layers, plus 2 T V = 32,768 logit values: 327,680
    values x 4 bytes = 1.25 MiB, 128 KiB of it scores. At context 128 the linear part doubles
    and the scores quadruple."""
    from rigbench.workloads import WORKLOADS, resolved_options
    from rigbench.workloads.transformers import activation_bytes

    def at(**options):
        return activation_bytes("gpt", resolved_options(WORKLOADS["gpt"], options), 4)

    assert at() == (327_680 * 4, 32_768 * 4)
    total, scores = at(context=128)
    assert scores == 4 * 32_768 * 4 and total - scores == 2 * (327_680 - 32_768) * 4
    assert activation_bytes("gpt", resolved_options(WORKLOADS["gpt"], {}), 2) == (327_680 * 2, 32_768 * 2)
    assert activation_bytes("cnn", {}, 4) is None
    # GPT-2 small: Korthikanti et al.'s 34 s b h + 5 a s^2 b bytes a layer (16 bits) less dropout's
    # 2 s b h + 3 a s^2 b, with s = 1024, h = 768, a = 12, b = 1, over 12 layers, plus the logits
    small = activation_bytes("gpt", resolved_options(WORKLOADS["gpt"], {"preset": "small"}), 2)
    assert small[0] == 12 * (32 * 1024 * 768 + 2 * 12 * 1024**2) + 2 * 1024 * 50_304 * 2


def test_a_workload_that_trains_on_real_data_does_not_say_it_trains_on_synthetic_data_only():
    """gpt's data set said "(nominal: rigbench trains the gpt workload on synthetic tokens only)"
    in `rigbench workloads --json` after `rigbench train gpt --dataset pysrc` existed."""
    from rigbench.data.accepts import accepted_datasets

    assert accepted_datasets("gpt")
    for name, workload in WORKLOADS.items():
        if accepted_datasets(name):
            assert "only" not in workload.dataset.source.partition("synthetic")[2], name
