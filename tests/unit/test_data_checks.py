"""What the parent checks of a training's data before any trial (experiments/plan.prepare_data,
plan_train, plan_lr_find): an image folder's structure, its default place, and a batch the
training set cannot fill. Each is one line and exit 2 with nothing stored; no trial runs here."""

import zipfile

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from rigbench.cli import app
from rigbench.cli.advise import _print_lr_find, lr_find_summary
from rigbench.data import load_for_workload, train_samples
from rigbench.errors import UsageError
from rigbench.experiments.lr_find import plan_lr_find
from rigbench.experiments.plan import plan_train, prepare_data
from rigbench.spec import LrFindOptions, Metrics, Result, TrainOptions, TrialSpec


def pngs(folder, n):
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        Image.fromarray(np.full((4, 4, 3), i, np.uint8)).save(folder / f"{i}.png")


def refused(tmp_path, *args):
    """The command's one stderr line; it exited 2 and created no database."""
    db = tmp_path / "r.db"
    result = CliRunner().invoke(app, [*args, "--db", str(db)])
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rigbench: error: "), result.stderr
    assert not db.exists()  # refused before any run was recorded
    return lines[0]


def test_a_missing_image_folder_is_refused_before_anything_is_stored(tmp_path):
    line = refused(tmp_path, "train", "catsdogs", "--dataset", "image_folder", "--data-dir",
                   str(tmp_path / "nope"), "--epochs", "1")
    assert "nope does not exist" in line and "--data-dir" in line


def test_a_file_given_as_the_image_folder_is_not_a_folder(tmp_path):
    pngs(tmp_path / "imgs" / "a", 1)
    line = refused(tmp_path, "train", "catsdogs", "--dataset", "image_folder", "--data-dir",
                   str(tmp_path / "imgs" / "a" / "0.png"), "--epochs", "1")
    assert "0.png is not a folder" in line and "does not exist" not in line


@pytest.mark.parametrize("layout", [["a"], ["train/a", "test/a"]])
def test_an_image_folder_of_one_class_is_refused(tmp_path, layout):
    for folder in layout:
        pngs(tmp_path / "one" / folder, 4)
    with pytest.raises(UsageError, match="one class folder \\(a\\): an image folder needs at least 2 classes"):
        prepare_data("catsdogs", "image_folder", str(tmp_path / "one"))
    for command in (["train", "catsdogs", "--epochs", "1", "-b", "2"], ["lr-find", "catsdogs", "-b", "2"]):
        line = refused(tmp_path, *command, "--dataset", "image_folder", "--data-dir", str(tmp_path / "one"))
        assert "needs at least 2 classes" in line


def empty_dogs(root):
    for path in (root / "dogs").iterdir():
        path.unlink()


def a_third_class(root):
    pngs(root / "birds", 1)


def a_text_file(root):
    (root / "cats" / "notes.jpg").write_text("not a picture")


def a_bmp(root):
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(root / "cats" / "a.bmp")


@pytest.mark.parametrize("spoil, fragment", [
    (empty_dogs, "dogs is empty"),
    (a_third_class, "3 classes (birds, cats, dogs) but workload 'catsdogs' has 2 outputs"),
    (a_text_file, "notes.jpg is not an image"),
    (a_bmp, "a.bmp is not an image"),
])
def test_an_image_folder_a_trial_could_not_load_is_refused_up_front(tmp_path, spoil, fragment):
    root = tmp_path / "pets"
    pngs(root / "cats", 3)
    pngs(root / "dogs", 3)
    assert prepare_data("catsdogs", "image_folder", str(root)) == "image_folder"
    spoil(root)
    with pytest.raises(UsageError) as caught:
        prepare_data("catsdogs", "image_folder", str(root))
    assert fragment in str(caught.value)
    assert fragment in refused(tmp_path, "train", "catsdogs", "--dataset", "image_folder", "--data-dir", str(root))


def test_the_cache_folder_is_the_image_folder_without_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("RIGBENCH_CACHE_DIR", str(tmp_path / "cache"))
    default = tmp_path / "cache" / "data" / "image_folder"
    line = refused(tmp_path, "train", "catsdogs", "--dataset", "image_folder")
    assert str(default) in line and "--data-dir" in line
    default.mkdir(parents=True)
    assert str(default) in refused(tmp_path, "train", "catsdogs", "--dataset", "image_folder")  # empty
    pngs(default / "cats", 5)
    pngs(default / "dogs", 5)
    assert prepare_data("catsdogs", "image_folder") == "image_folder"
    (spec,) = plan_train("catsdogs", "image_folder", 1, batch_sizes=[8])
    assert spec.train is not None and spec.train.data_dir is None  # the child looks in the same place


def test_a_batch_the_training_set_cannot_fill_is_refused_in_the_parent(tmp_path):
    with pytest.raises(UsageError, match="digits has 1,438 training samples, fewer than one batch of 5000"):
        plan_lr_find("mlp", "digits", batch_size=5000)
    with pytest.raises(UsageError, match="--max-train-samples 10 does not fill one batch of 64"):
        plan_train("mlp", "digits", 1, batch_sizes=[8, 64], max_train_samples=10)
    assert [s.batch_size for s in plan_train("mlp", "digits", 1, batch_sizes=[1438])] == [1438]
    assert "lower --batch-size" in refused(tmp_path, "lr-find", "mlp", "--dataset", "digits", "-b", "5000")
    assert "raise --max-train-samples" in refused(tmp_path, "train", "mlp", "--dataset", "digits",
                                                  "--max-train-samples", "10", "-b", "64")


@pytest.mark.parametrize("workload, dataset, targets, said", [
    ("gpt", "pysrc", {"target_accuracy": 0.5}, "--target-accuracy: gpt has a held-out loss, not an accuracy: "
                                               "give --target-loss"),
    ("autoencoder", "digits", {"target_accuracy": 0.9}, "autoencoder has a held-out loss, not an accuracy"),
    ("dcgan", "digits", {"target_accuracy": 0.9}, "--target-accuracy: dcgan has no held-out figure"),
    ("dcgan", "digits", {"target_loss": 1.0}, "--target-loss: dcgan has no held-out loss"),
    ("mlp", "digits", {"target_accuracy": 0.1}, "--target-accuracy 10.0% is no better than guessing among "
                                                "the 10 classes of digits (10.0%): give a higher one"),
])
def test_a_target_the_workload_has_no_figure_for_is_refused(workload, dataset, targets, said):
    """Was stored and trained towards to the last epoch, never reached (gpt: 7 minutes, exit 0)."""
    with pytest.raises(UsageError) as caught:
        plan_train(workload, dataset, 1, **targets)
    assert said in str(caught.value)
    assert plan_train("autoencoder", "digits", 1, target_loss=0.05)[0].train.target_loss == 0.05  # a loss it has


def test_what_no_trial_could_do_is_refused_before_any(tmp_path):
    """--workers with jax or keras: each of their trials was stored `unsupported` after loading
    the data, exit 1. A target with no figure to reach, through the command: exit 2, nothing stored."""
    with pytest.raises(UsageError, match="--workers is torch's DataLoader; jax, keras-torch read host batches"):
        plan_train("mlp", "digits", 1, frameworks=["torch", "jax", "keras-torch"], input_mode="loader", workers=2)
    assert "give --target-loss" in refused(tmp_path, "train", "gpt", "--dataset", "pysrc", "--target-accuracy", "0.5")
    assert "1.5% is no better than guessing" in refused(tmp_path, "train", "mlp", "--dataset", "digits",
                                                        "--target-accuracy", "1.5")  # read as 1.5%, reached at once
    assert plan_train("mlp", "digits", 1, target_accuracy=0.11)[0].train.target_accuracy == 0.11


def test_a_limit_or_a_folder_that_would_be_stored_unused_is_refused(tmp_path):
    """--max-train-samples above the training set and --data-dir for digits changed nothing,
    yet were stored as the run's settings."""
    with pytest.raises(UsageError, match="--max-train-samples 100,000 is more than the 1,438 training samples of "
                                         "digits: give at most 1,438"):
        plan_train("mlp", "digits", 1, max_train_samples=100_000)
    assert plan_train("mlp", "digits", 1, max_train_samples=1438)[0].train.max_train_samples == 1438
    line = refused(tmp_path, "train", "mlp", "--dataset", "digits", "--data-dir", str(tmp_path), "--epochs", "1")
    assert "digits ships inside scikit-learn and reads no folder; leave it out" in line


def ptb_and_wikitext(tmp_path, text: bytes) -> None:
    """PTB's three files (5,000 training bytes, 600 validation) in tmp_path/ptb and WikiText-2's
    zip (7,001 and 500) in tmp_path/wiki, cut from `text`, as upstream lays them out."""
    (tmp_path / "ptb").mkdir()
    for split in ("train", "valid", "test"):
        (tmp_path / "ptb" / f"ptb.{split}.txt").write_bytes(text[: 5000 if split == "train" else 600])
    (tmp_path / "wiki").mkdir()
    with zipfile.ZipFile(tmp_path / "wiki" / "wikitext-2-raw-v1.zip", "w") as z:
        z.writestr("wikitext-2-raw/wiki.train.raw", text[:7001])
        z.writestr("wikitext-2-raw/wiki.valid.raw", text[:500])


def test_training_counts_known_without_loading_are_the_loaded_ones(tmp_path):
    """train_samples reads sizes from the registry, a folder's listing, a manifest, files' sizes and
    a zip's directory: each must be the count the loader then gives."""
    pngs(tmp_path / "pets" / "cats", 7)
    pngs(tmp_path / "pets" / "dogs", 3)
    text = bytes(range(256)) * 40
    (tmp_path / "shakespeare").mkdir()
    (tmp_path / "shakespeare" / "input.txt").write_bytes(text)
    ptb_and_wikitext(tmp_path, text)
    cases = [("mlp", "digits", None), ("catsdogs", "image_folder", tmp_path / "pets"), ("gpt", "pysrc", None),
             ("lstm", "tinyshakespeare", tmp_path / "shakespeare"), ("gpt", "ptb", tmp_path / "ptb"),
             ("gpt", "wikitext2", tmp_path / "wiki")]
    for workload, dataset, folder in cases:
        loaded = load_for_workload(workload, dataset, folder, download=False, verify=False)
        assert train_samples(workload, dataset, folder) == len(loaded.x_train), dataset
    assert train_samples("mlp", "mnist", tmp_path / "empty") == 60_000  # the registry's, for checked files
    assert train_samples("gpt", "ptb", tmp_path / "empty") is None  # not fetched: the trial decides


def test_a_context_a_text_part_cannot_fill_is_refused_where_the_loader_refuses_it(tmp_path):
    """A context longer than the training or validation text: the child refused it only after
    loading (an `unsupported` trial, exit 1), and a training part with no window read "pysrc has 0
    training samples ...: lower --batch-size to at most 0". The parent now refuses exactly where
    the loader would, naming the option (or the text, where the workload's length is fixed)."""
    text = bytes(range(256)) * 40
    ptb_and_wikitext(tmp_path, text)
    for dataset, folder, longest in (("ptb", tmp_path / "ptb", 599), ("wikitext2", tmp_path / "wiki", 499)):
        plan_train(f"gpt:context={longest}", dataset, 1, batch_sizes=[1], data_dir=str(folder))
        load_for_workload("gpt", dataset, folder, options={"context": longest}, download=False, verify=False)
        with pytest.raises(UsageError) as loader:
            load_for_workload("gpt", dataset, folder, options={"context": longest + 1}, download=False, verify=False)
        with pytest.raises(UsageError, match=f"the validation part of {dataset} .*: give gpt:context={longest} or less"):
            plan_train(f"gpt:context={longest + 1}", dataset, 1, batch_sizes=[1], data_dir=str(folder))
        assert "validation part" in str(loader.value)
    (tmp_path / "short").mkdir()
    (tmp_path / "short" / "input.txt").write_bytes(text[:30])  # lstm's 32-byte windows: no option sets them
    with pytest.raises(UsageError, match="the training part of tinyshakespeare has 27 bytes.*: train on a longer text"):
        plan_lr_find("lstm", "tinyshakespeare", data_dir=str(tmp_path / "short"))
    line = refused(tmp_path, "train", "gpt:context=700000", "--dataset", "pysrc", "--epochs", "1", "-b", "1")
    assert line.endswith("training part of pysrc has 631,627 bytes, fewer than one window of gpt's 700,000 bytes "
                         "plus its next byte: give gpt:context=58,697 or less")


def test_lr_find_header_leaves_out_a_count_the_trial_never_made(capsys):
    spec = TrialSpec(workload="mlp", device="cpu", batch_size=64, lr_find=LrFindOptions(dataset="digits"))
    result = Result(run_id="r", created_at="2026-01-01T00:00:00+00:00", spec=spec, status="crash",
                    error="killed", metrics=Metrics())
    _print_lr_find(lr_find_summary(result), None, None)  # type: ignore[arg-type]
    header = capsys.readouterr().out.splitlines()[0]
    assert header.startswith("lr-find mlp on digits, cpu b64") and "?" not in header
    counted = result.model_copy(update={"metrics": Metrics(dataset_size=1438)})
    _print_lr_find(lr_find_summary(counted), None, None)  # type: ignore[arg-type]
    assert "lr-find mlp on digits (1438 training samples), cpu b64" in capsys.readouterr().out



def _no_trial(*args, **kwargs):
    raise AssertionError("a trial ran")


def test_recommend_refuses_a_batch_its_lr_find_and_loader_epoch_cannot_fill(tmp_path, monkeypatch):
    """recommend runs an lr-find and a loader epoch on the data set it finds here offline (digits,
    without MNIST in the cache) at the batch it picks from its grid: a grid batch that set cannot
    fill is refused before the first trial, as `lr-find -b 5000` is (both used to end `unsupported`
    after the max-batch search and the speed trials had run)."""
    from rigbench.experiments import max_batch, recommend_trials
    from rigbench.store import Store

    monkeypatch.setenv("RIGBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(max_batch, "find_max_batch", _no_trial)
    monkeypatch.setattr(recommend_trials, "run_trials", _no_trial)
    db = tmp_path / "r.db"
    result = CliRunner().invoke(app, ["recommend", "mlp", "-d", "cpu", "-b", "64,5000", "--db", str(db)])
    assert result.exit_code == 2, (result.output, result.exception)
    assert result.stderr.strip() == (
        "rigbench: error: digits has 1,438 training samples, fewer than one batch of 5000, and recommend's lr-find "
        "and loader epoch train on it at the batch it picks: lower --batch-size to at most 1,438, or fetch a "
        "larger data set for mlp (rigbench lr-find mlp --dataset ... downloads one)")
    assert Store(str(db)).list() == []


def _stored(spec: TrialSpec, **metrics) -> Result:
    return Result(id=1, run_id="r", created_at="2026-01-01T00:00:00+00:00", spec=spec, status="ok",
                  metrics=Metrics(**metrics))


def test_recommend_checks_only_the_data_trials_it_will_run(tmp_path, monkeypatch):
    """With an lr-find suggestion and a loader run stored, recommend runs no data trial: a large
    batch is its own business then (the speed trials use synthetic data). Where the batch it picks
    is one the data set cannot fill (a stored trial's, which no flag chose), the data trials are
    said missing, with why, instead of run to `unsupported`."""
    from rigbench.experiments import recommend_trials as trials
    from rigbench.experiments.recommend_data import check_data_batches
    from rigbench.workloads import get_workload

    monkeypatch.setenv("RIGBENCH_CACHE_DIR", str(tmp_path / "cache"))
    mlp = get_workload("mlp")
    lr_find = _stored(TrialSpec(workload="mlp", device="cpu", batch_size=64, lr_find=LrFindOptions(dataset="digits")),
                      suggested_lr=0.01)
    loader = _stored(TrialSpec(workload="mlp", device="cpu", batch_size=64,
                               train=TrainOptions(dataset="digits", epochs=1, input_mode="loader")))
    with pytest.raises(UsageError, match="fewer than one batch of 5000"):
        check_data_batches(mlp, {}, ["cpu"], [64, 5000], [loader])  # the lr-find would run
    with pytest.raises(UsageError, match="fewer than one batch of 5000"):
        check_data_batches(mlp, {}, ["cpu"], [64, 5000], [lr_find])  # the loader epoch would
    check_data_batches(mlp, {}, ["cpu"], [64, 5000], [lr_find, loader])
    check_data_batches(mlp, {}, ["cpu"], [64, 1438], [])

    monkeypatch.setattr(trials, "run_trials", _no_trial)
    outcome = trials.RecommendOutcome("mlp", ["cpu"], [])
    session = trials.Session(None, True, outcome, lambda text: None, lambda r: None)  # type: ignore[arg-type]
    trials.data_trials(session, [], mlp, {}, "torch", "cpu", 5000, quick=False)
    assert outcome.missing == ["lr-find and the input pipeline at b5000: digits, the data set here offline, has 1,438 "
                               "training samples, fewer than one batch (rigbench lr-find mlp --dataset ... can "
                               "download a larger one)"]
