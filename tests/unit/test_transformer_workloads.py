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
    ("gpt:heads=5", "heads"), ("vit:patch=5", "must divide"), ("gpt:preset=huge", "one of tiny"),
    ("gpt:layers=0", "positive"),
])
def test_a_shape_the_options_cannot_build_is_refused_up_front(ref, message):
    with pytest.raises(UsageError, match=message):
        parse_workload_ref(ref)


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
