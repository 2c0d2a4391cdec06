import numpy as np
import pytest
from PIL import Image

from rigbench.data import load, load_for_workload
from rigbench.errors import UsageError


def write_pngs(folder, n, seed, size=(12, 10)):
    """n random RGB PNGs of `size` (H, W) in `folder`; returns them as [n,3,H,W]."""
    folder.mkdir(parents=True, exist_ok=True)
    images = np.random.default_rng(seed).integers(0, 256, (n, *size, 3), dtype=np.uint8)
    for i, image in enumerate(images):
        Image.fromarray(image).save(folder / f"{i:03d}.png")
    return images.transpose(0, 3, 1, 2)


def test_pre_split_folder_loads_back_exactly(tmp_path):
    cats_train = write_pngs(tmp_path / "train" / "cats", 3, 0)
    dogs_train = write_pngs(tmp_path / "train" / "dogs", 2, 1)
    cats_test = write_pngs(tmp_path / "test" / "cats", 1, 2)
    dogs_test = write_pngs(tmp_path / "test" / "dogs", 2, 3)
    (tmp_path / "train" / "dogs" / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")  # hidden: skipped
    x_train, y_train, x_test, y_test = data = load("image_folder", tmp_path, shape=(3, 12, 10))
    assert data.classes == ("cats", "dogs")
    np.testing.assert_array_equal(x_train, np.concatenate([cats_train, dogs_train]))
    np.testing.assert_array_equal(y_train, [0, 0, 0, 1, 1])
    np.testing.assert_array_equal(x_test, np.concatenate([cats_test, dogs_test]))
    np.testing.assert_array_equal(y_test, [0, 1, 1])


def test_split_by_seed_with_sorted_classes_resized(tmp_path):
    write_pngs(tmp_path / "dogs", 5, 0)
    write_pngs(tmp_path / "cats", 5, 1)
    Image.fromarray(np.zeros((20, 30, 3), np.uint8)).save(tmp_path / "cats" / "big.jpg")
    data = load("image_folder", tmp_path, shape=(3, 16, 16))
    assert data.classes == ("cats", "dogs")
    assert data.x_train.shape == (9, 3, 16, 16) and data.x_test.shape == (2, 3, 16, 16)
    assert sorted(data.y_test) == [0, 1]
    again = load("image_folder", tmp_path, shape=(3, 16, 16))
    np.testing.assert_array_equal(data.x_test, again.x_test)
    assert load("image_folder", tmp_path, shape=(1, 8, 8)).x_train.shape == (9, 1, 8, 8)


def test_non_image_file_is_named(tmp_path):
    write_pngs(tmp_path / "cats", 2, 0)
    write_pngs(tmp_path / "dogs", 2, 1)
    (tmp_path / "dogs" / "notes.txt").write_text("not a picture")
    with pytest.raises(UsageError, match=r"dogs/notes.txt is not an image"):
        load("image_folder", tmp_path, shape=(3, 8, 8))


def test_other_image_formats_and_damaged_files_are_named(tmp_path):
    write_pngs(tmp_path / "cats", 2, 0)
    (tmp_path / "dogs").mkdir()
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(tmp_path / "dogs" / "a.bmp")
    with pytest.raises(UsageError, match="dogs/a.bmp is a BMP image: only PNG and JPEG"):
        load("image_folder", tmp_path, shape=(3, 8, 8))
    (tmp_path / "dogs" / "a.bmp").unlink()
    write_pngs(tmp_path / "dogs", 1, 1)
    png = tmp_path / "dogs" / "000.png"
    png.write_bytes(png.read_bytes()[:60])
    with pytest.raises(UsageError, match="dogs/000.png is not a readable PNG or JPEG"):
        load("image_folder", tmp_path, shape=(3, 8, 8))


def test_empty_class_and_bad_layouts(tmp_path):
    write_pngs(tmp_path / "cats", 2, 0)
    (tmp_path / "dogs").mkdir()
    with pytest.raises(UsageError, match=r"class folder .*dogs is empty"):
        load("image_folder", tmp_path, shape=(3, 8, 8))
    with pytest.raises(UsageError, match="does not exist"):
        load("image_folder", tmp_path / "nowhere", shape=(3, 8, 8))
    with pytest.raises(UsageError, match="has no class folders"):
        load("image_folder", tmp_path / "cats", shape=(3, 8, 8))
    write_pngs(tmp_path / "dogs", 1, 1)
    (tmp_path / "train").mkdir()
    with pytest.raises(UsageError, match="has a train/ folder but no test/ one"):
        load("image_folder", tmp_path, shape=(3, 8, 8))


def test_train_and_test_need_the_same_classes(tmp_path):
    write_pngs(tmp_path / "train" / "cats", 1, 0)
    write_pngs(tmp_path / "train" / "dogs", 1, 1)
    write_pngs(tmp_path / "test" / "cats", 1, 2)
    write_pngs(tmp_path / "test" / "birds", 1, 3)
    with pytest.raises(UsageError, match="train/ and test/ need the same class folders"):
        load("image_folder", tmp_path, shape=(3, 8, 8))


def test_catsdogs_workload(tmp_path, monkeypatch):
    write_pngs(tmp_path / "cats", 2, 0, size=(8, 8))
    write_pngs(tmp_path / "dogs", 2, 1, size=(8, 8))
    data = load_for_workload("catsdogs", "image_folder", tmp_path)
    assert data.x_train.shape[1:] == (3, 256, 256)
    write_pngs(tmp_path / "birds", 2, 2, size=(8, 8))
    with pytest.raises(UsageError, match="has 3 classes .* 'catsdogs' has 2 outputs"):
        load_for_workload("catsdogs", None, tmp_path)
    with pytest.raises(UsageError, match="'catsdogs' cannot train on 'digits'"):
        load_for_workload("catsdogs", "digits")
