import numpy as np
import pytest
from PIL import Image

from rigbench.data import DATASETS, load, load_for_workload, resize_images, to_channels, to_workload_shape
from rigbench.data.split import stratified_split


@pytest.fixture(scope="module")
def digits():
    return load("digits")


def test_all_1797_real_images_split_stratified(digits):
    x_train, y_train, x_test, y_test = digits
    assert len(x_train) + len(x_test) == 1797
    assert (len(x_train), len(x_test)) == (DATASETS["digits"].train_size, DATASETS["digits"].test_size)
    assert x_train.shape[1:] == (1, 8, 8) and x_train.dtype == np.uint8 and x_train.max() == 255
    assert y_train.dtype == np.int64 and set(np.unique(y_train)) == set(range(10)) == set(np.unique(y_test))
    # each class is ~20% of the test set's share of it
    for cls in range(10):
        n = (y_train == cls).sum() + (y_test == cls).sum()
        assert (y_test == cls).sum() == round(n * 0.2)


def test_split_is_deterministic(digits):
    again = load("digits")
    for a, b in zip(digits, again):
        np.testing.assert_array_equal(a, b)


def test_stratified_split_keeps_a_training_sample_per_class():
    labels = np.array([0, 0, 0, 0, 0, 1, 2, 2])
    train, test = stratified_split(labels, 0.4, seed=1)
    assert sorted(np.concatenate([train, test])) == list(range(8))
    assert 5 in train  # the only sample of class 1
    assert (labels[test] == 0).sum() == 2 and (labels[test] == 2).sum() == 1
    np.testing.assert_array_equal(stratified_split(labels, 0.4, seed=1)[1], test)


def test_to_workload_shape_for_dense_and_conv_nets(digits):
    x = digits.x_test
    mlp = to_workload_shape(x, (1, 28, 28))
    cnn = to_workload_shape(x, (3, 32, 32))
    assert mlp.shape == (len(x), 1, 28, 28) and cnn.shape == (len(x), 3, 32, 32)
    assert mlp.dtype == cnn.dtype == np.uint8
    np.testing.assert_array_equal(cnn[:, 0], cnn[:, 2])  # grey repeated
    assert to_workload_shape(cnn, (1, 32, 32)).shape == (len(x), 1, 32, 32)


def test_load_for_workload_converts(digits):
    data = load_for_workload("resnet", "digits")
    assert data.x_train.shape == (len(digits.x_train), 3, 32, 32)
    np.testing.assert_array_equal(data.y_train, digits.y_train)
    assert load_for_workload("autoencoder", "digits").x_test.shape[1:] == (1, 28, 28)


def test_bilinear_matches_pillow_and_nearest_is_exact():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (2, 1, 8, 8), dtype=np.uint8)
    ours = resize_images(x, (28, 28))
    pil = np.stack([np.asarray(Image.fromarray(img[0]).resize((28, 28), Image.Resampling.BILINEAR))
                    for img in x])
    assert np.abs(ours[:, 0].astype(int) - pil.astype(int)).max() <= 1
    square = np.arange(4, dtype=np.uint8).reshape(1, 1, 2, 2)
    np.testing.assert_array_equal(resize_images(square, (4, 4), "nearest")[0, 0],
                                  [[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3], [2, 2, 3, 3]])
    flat = np.full((1, 3, 5, 7), 77, dtype=np.uint8)
    assert (resize_images(flat, (13, 3)) == 77).all()


def test_rgb_to_grey_matches_pillow():
    rgb = np.random.default_rng(1).integers(0, 256, (1, 3, 6, 6), dtype=np.uint8)
    pil = np.asarray(Image.fromarray(rgb[0].transpose(1, 2, 0)).convert("L"))
    assert np.abs(to_channels(rgb, 1)[0, 0].astype(int) - pil.astype(int)).max() <= 1
