import dataclasses
import itertools

import pytest

from rigbench.errors import UsageError
from rigbench.units import (
    MIN_MEMORY_LIMIT,
    format_bytes,
    parse_memory_limit,
    parse_positive_ints,
    parse_size,
    split_list,
    with_preset,
)
from rigbench.workloads import WORKLOADS, parse_workload_ref, resolved_options
from rigbench.workloads.flops import train_flops_per_sample, trainable_params


@pytest.mark.parametrize("text,expected", [
    ("2GiB", 2 * 1024**3), ("512MiB", 512 * 1024**2), ("1.5GB", 1_500_000_000),
    ("1000B", 1000), ("64 kib", 65536),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "2 parsecs", "GiB", "-1GiB", "0GiB"])
def test_parse_size_rejects(text):
    with pytest.raises(UsageError):
        parse_size(text)


def test_a_size_needs_a_unit_and_a_memory_limit_a_floor():
    # `--memory-limit 1.5` was read as 1.5 bytes; `1KiB` was taken and every trial ended `oom`
    for bare in ("1.5", "1000", "0"):
        with pytest.raises(UsageError, match=f"--memory-limit '{bare}' has no unit: give a unit, e.g. {bare}GiB"):
            parse_memory_limit(bare)
    for tiny in ("1KiB", "63MiB", "1000B"):
        with pytest.raises(UsageError, match=f"--memory-limit must be at least 64MiB .*, got '{tiny}'"):
            parse_memory_limit(tiny)
    assert parse_memory_limit("64MiB") == MIN_MEMORY_LIMIT == 64 * 2**20
    assert parse_memory_limit("1.5GiB") == 3 * 2**29


@pytest.mark.parametrize("command", [["run", "mlp"], ["sweep", "mlp"], ["max-batch", "mlp"]])
def test_every_command_with_a_memory_limit_refuses_a_bare_number_a_tiny_limit_and_none(command, tmp_path):
    from typer.testing import CliRunner

    from rigbench import cli

    for limit, message in (("1.5", "--memory-limit '1.5' has no unit"), ("1KiB", "--memory-limit must be at least"),
                           ("", "--memory-limit '' is not a size")):  # `--memory-limit "$UNSET"` was no limit
        proc = CliRunner().invoke(cli.app, [*command, "-d", "cpu", "--memory-limit", limit, "--db", str(tmp_path / "x.db")])
        assert proc.exit_code == 2 and proc.stderr.count("\n") == 1 and message in proc.stderr, proc.output


def test_lists_from_repeats_and_commas():
    assert split_list(["16,64", "128", " 8 , "]) == ["16", "64", "128", "8"]
    assert parse_positive_ints(["16,64"], "--batch-size") == [16, 64]
    with pytest.raises(UsageError, match="--batch-size must be at least 1"):
        parse_positive_ints(["0"], "--batch-size")
    with pytest.raises(UsageError, match="whole numbers"):
        parse_positive_ints(["x"], "--batch-size")


def test_format_bytes():
    assert format_bytes(None) == "-"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(3 * 2**30) == "3.0 GiB"


def test_every_issue_workload_is_registered():
    # the seeds' networks are all there (more may be added: no test counts the registry)
    assert {"mlp", "autoencoder", "cnn", "rcnn", "lstm", "dcgan", "resnet", "catsdogs"} <= set(WORKLOADS)
    assert WORKLOADS["cnn"].dataset.train_size == 50_000
    # a language-model sample is a 32-token sequence, so the epoch is counted in sequences
    assert WORKLOADS["lstm"].dataset.train_size == 929_589 // 32 == 29_049
    assert all(w.origin and w.dataset.train_size > 0 for w in WORKLOADS.values())


def test_a_language_models_epoch_is_its_corpus_tokens_in_sequences_of_its_own_length():
    from rigbench.workloads import epoch_samples

    # OpenWebText's 9,035,582,198 GPT-2 tokens (nanoGPT's prepare.py), by hand
    assert epoch_samples(WORKLOADS["gpt"], {"preset": "small"}) == 8_823_810  # 1024 tokens each
    assert epoch_samples(WORKLOADS["gpt"], {}) == 141_180_971  # the tiny preset's 64
    assert epoch_samples(WORKLOADS["gpt"], {"context": 128}) == 70_590_485
    assert epoch_samples(WORKLOADS["lstm"], {}) == 29_049  # PTB at its 32 tokens, as quoted
    assert epoch_samples(WORKLOADS["cnn"], {}) == 50_000 and epoch_samples(WORKLOADS["vit"], {"image": 224}) == 50_000


def test_workload_refs_with_options():
    w, opts = parse_workload_ref("resnet:depth=56")
    assert w.name == "resnet" and opts == {"depth": 56}
    with pytest.raises(UsageError, match="unknown workload 'nope': choose from mlp"):
        parse_workload_ref("nope")
    with pytest.raises(UsageError, match="must be one of"):
        parse_workload_ref("resnet:depth=21")
    with pytest.raises(UsageError, match="has no option"):
        parse_workload_ref("cnn:depth=20")
    # a key given twice: the last one won silently, so `sweep resnet:depth=56,depth=20` ran depth 20 alone
    with pytest.raises(UsageError, match=r"option depth of 'resnet' is given twice in 'resnet:depth=56,depth=20': "
                                         r"give it once \(to compare two values, name the workload once for "
                                         r"each: resnet:depth=56 and resnet:depth=20\)"):
        parse_workload_ref("resnet:depth=56,depth=20")
    with pytest.raises(UsageError, match="option depth of 'resnet' takes a whole number, got 'x'"):  # "a int"
        parse_workload_ref("resnet:depth=x")


# --------------------------------------------------------------------------- declared facts


def test_facts_are_declared_once():
    lstm, dcgan = WORKLOADS["lstm"], WORKLOADS["dcgan"]
    assert lstm.vocab == lstm.num_classes == 10_000 and lstm.layout == "tokens"
    assert dcgan.latent_size == 100 and dcgan.optimizer_args["betas"] == (0.5, 0.999)
    assert [p.name for p in dcgan.parts] == ["discriminator", "generator"]  # D, then G
    assert not dcgan.lr_find and WORKLOADS["cnn"].lr_find
    assert lstm.lr_find and WORKLOADS["gpt"].lr_find  # language models have one loss on real text
    assert WORKLOADS["autoencoder"].targets == "input" and WORKLOADS["autoencoder"].input_range == "unit"
    with pytest.raises(ValueError, match="not one of"):
        dataclasses.replace(WORKLOADS["cnn"], loss="hinge")


# --------------------------------------------------------------------------- analytic counts


def _params(name: str, **options) -> int:
    w = WORKLOADS[name]
    return trainable_params(w, resolved_options(w, options))


def test_analytic_params_match_the_papers():
    assert _params("mlp") == 784 * 2048 + 2048 + 2 * (2048 * 2048 + 2048) + 2048 * 10 + 10
    sizes = [784, 1000, 500, 250, 30]
    pairs = list(itertools.pairwise(sizes))
    pairs += [(b, a) for a, b in reversed(pairs)]
    assert _params("autoencoder") == sum(a * b + b for a, b in pairs)  # 2,837,314
    assert _params("cnn") == 122_570  # the TensorFlow tutorial's summary
    # Option-A shortcuts have no parameters: convs 268,336 + BN affine 2,736 + fc 650 = 269,722
    # (He et al. Table 6: 0.27M). The often-quoted 272,474 adds the 2,752 parameters of
    # 1x1-conv+BN projection shortcuts (option B) at the two stage transitions.
    assert _params("resnet") == 269_722
    assert _params("resnet", depth=56) == 853_018  # Table 6: 0.85M
    assert _params("rcnn") == pytest.approx(670_000, rel=0.01)  # Liang & Hu Table 1: RCNN-96 0.67M
    assert _params("catsdogs") == 21_455_521  # seed 001's notebook summary: "Trainable params"
    for hidden in (128, 256):
        emb_and_decoder = 10_000 * hidden + hidden * 10_000 + 10_000
        assert _params("lstm", hidden=hidden) == emb_and_decoder + 2 * (4 * hidden * (hidden + hidden) + 2 * 4 * hidden)


def test_mlp_train_flops_by_hand():
    weights = [784 * 2048, 2048 * 2048, 2048 * 2048, 2048 * 10]
    # 2 FLOPs per multiply-add; forward 2*W per layer; backward every weight gradient (2*W)
    # and the input gradient (2*W) of every layer except the first (its input is the data).
    expected = 2 * sum(weights) + 2 * sum(weights) + 2 * sum(weights[1:])  # 56,877,056
    assert train_flops_per_sample(WORKLOADS["mlp"]) == expected
    assert expected == pytest.approx(3 * 2 * sum(weights), rel=0.06)  # the textbook 3x, less layer 1


def test_analytic_flops_grow_with_the_options():
    resnet, rcnn, lstm = WORKLOADS["resnet"], WORKLOADS["rcnn"], WORKLOADS["lstm"]
    assert train_flops_per_sample(resnet, {"depth": 56}) > 2.5 * train_flops_per_sample(resnet, {"depth": 20})
    assert train_flops_per_sample(rcnn, {"steps": 1}) < train_flops_per_sample(rcnn) < train_flops_per_sample(rcnn, {"steps": 4})
    assert train_flops_per_sample(lstm, {"hidden": 128}) < train_flops_per_sample(lstm)
    # One DCGAN D forward on 64x64 is ~0.1 GFLOP and one G forward ~0.4 GFLOP (pytorch/examples
    # sizes); a step runs G once and D three times, and backpropagates through all of them.
    assert 1.5e9 < train_flops_per_sample(WORKLOADS["dcgan"]) < 4e9
    assert 30e9 < train_flops_per_sample(WORKLOADS["catsdogs"]) < 32e9  # ~3 x 10.4 GFLOP forward per image


def test_preset_flag_adds_the_preset_to_each_named_workload():
    assert with_preset(["gpt", "vit:layers=4"], "tiny") == ["gpt:preset=tiny", "vit:layers=4,preset=tiny"]
    assert with_preset(["gpt"], None) == ["gpt"]
    with pytest.raises(UsageError, match="--preset needs the workloads named"):
        with_preset([], "small")
    with pytest.raises(UsageError, match="names a preset and --preset gives another"):
        with_preset(["gpt:preset=small"], "tiny")
    with pytest.raises(UsageError, match="option preset=tiny of 'mlp'|has no option 'preset=tiny'"):
        parse_workload_ref(with_preset(["mlp"], "tiny")[0])
