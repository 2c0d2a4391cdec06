"""The user's own images: one sub-folder per class, PNG or JPEG, read with Pillow.

    root/cats/001.jpg, root/dogs/002.png, ...          split here by a seed
    root/train/cats/..., root/test/cats/..., ...       split kept as given

Classes are the sorted folder names, so the label of a class never depends on the order
the file system lists them in. Every image is converted to RGB (or grey) and resized to the
workload's (H, W) as it is decoded, so the full-size images are never all in memory.
Hidden entries (.DS_Store, .ipynb_checkpoints) are skipped.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from rigbench.data.split import stratified_split
from rigbench.errors import UsageError

IMAGE_FORMATS = ("PNG", "JPEG")
#: How a folder without train/ and test/ is split: each class's held-out share, and the seed.
TEST_FRACTION = 0.2
SEED = 0
#: The first bytes of each format read, as Pillow identifies them (by content, not by name).
_SIGNATURES = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff")
_NEEDS_PILLOW = "image folders need Pillow: pip install 'rigbench[data]'"


def find_classes(root: str | Path) -> tuple[str, ...]:
    """The class names under `root` (or under root/train when it is pre-split), sorted."""
    return tuple(sorted(_class_dirs(_layout(Path(root))[0])))


def check_image_folder(root: str | Path, default: bool = False) -> tuple[str, ...]:
    """Check the folder without decoding it and return its classes: done in the parent
    (data.ensure_files) before any trial, so that a folder the user must fix is one error
    (exit 2), not an `unsupported` trial stored per configuration. `default`: `root` is the
    cache's folder, not one the user gave, so the error names both it and --data-dir.

    Checked here: the folder exists and is not empty, its train/ and test/ layout, its class
    folders (at least 2, the same in both parts, none empty, none holding a folder), Pillow
    installed, and every file readable and starting with a PNG or JPEG signature (8 bytes read
    per file). Not checked: that each image decodes, which means reading every image whole, the
    trial's own loading; a file damaged past its first bytes still ends the trial `unsupported`,
    naming it.
    The class count against the workload's outputs is data.check_classes'."""
    root = Path(root)
    if default and not (root.is_dir() and any(not p.name.startswith(".") for p in root.iterdir())):
        raise UsageError(f"no images in the default image folder {root}: put one sub-folder of PNG/JPEG "
                         f"images per class there, or give --data-dir DIR")
    if importlib.util.find_spec("PIL") is None:
        raise UsageError(_NEEDS_PILLOW)
    train_root, test_root = _layout(root)
    classes = find_classes(root)
    if len(classes) < 2:  # one class trains to a held-out accuracy of 100% that means nothing
        raise UsageError(f"{train_root} has one class folder ({classes[0]}): an image folder needs at least 2 "
                         f"classes, each in its own sub-folder, e.g. {train_root / 'cats'} and {train_root / 'dogs'}")
    for folder in (train_root, test_root):
        if folder is not None:
            for path in _listing(folder, classes)[0]:
                _check_signature(path)
    return classes


def training_images(root: str | Path) -> int:
    """How many images `root` gives for training (after the split), from the listing alone."""
    train_root, test_root = _layout(Path(root))
    labels = _listing(train_root, find_classes(root))[1]
    return len(labels) if test_root is not None else len(stratified_split(labels, TEST_FRACTION, SEED)[0])


def load_image_folder(root: str | Path, size: tuple[int, int], channels: int = 3,
                      test_fraction: float = TEST_FRACTION, seed: int = SEED
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train uint8 [N,C,H,W], y_train int64, x_test, y_test) from the folder tree at `root`.

    `size` is (H, W). Without train/ and test/ sub-folders, each class is split by
    `test_fraction` with `seed` (stratified, deterministic).
    """
    train_root, test_root = _layout(Path(root))
    classes = find_classes(root)
    train_files, train_labels = _listing(train_root, classes)
    if test_root is None:
        train_idx, test_idx = stratified_split(train_labels, test_fraction, seed)
        test_files = [train_files[i] for i in test_idx]
        test_labels = train_labels[test_idx]
        train_files = [train_files[i] for i in train_idx]
        train_labels = train_labels[train_idx]
    else:
        test_files, test_labels = _listing(test_root, classes)
    return (_decode_all(train_files, size, channels), train_labels,
            _decode_all(test_files, size, channels), test_labels)


def _layout(root: Path) -> tuple[Path, Path | None]:
    """(folder of training classes, folder of test classes or None when we split)."""
    if not root.is_dir():
        what = "is not a folder" if root.exists() else "does not exist"  # a file given for the folder
        raise UsageError(f"image folder {root} {what}: give --data-dir a folder with one "
                         f"sub-folder of PNG/JPEG images per class")
    has_train, has_test = (root / "train").is_dir(), (root / "test").is_dir()
    if has_train and has_test:
        return root / "train", root / "test"
    if has_train or has_test:
        lone = "train" if has_train else "test"
        raise UsageError(f"{root} has a {lone}/ folder but no {'test' if has_train else 'train'}/ one: "
                         f"give both, or neither and let rigbench split the classes")
    return root, None


def _class_dirs(folder: Path) -> list[str]:
    names = [p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")]
    if not names:
        raise UsageError(f"{folder} has no class folders: put each class's images in its own "
                         f"sub-folder, e.g. {folder / 'cats'} and {folder / 'dogs'}")
    return names


def _listing(folder: Path, classes: tuple[str, ...]) -> tuple[list[Path], np.ndarray]:
    """Every image path under `folder` in class then name order, and its label."""
    found = sorted(_class_dirs(folder))
    if tuple(found) != classes:
        raise UsageError(f"{folder} has classes {', '.join(found)} but the training folder has "
                         f"{', '.join(classes)}: train/ and test/ need the same class folders")
    files: list[Path] = []
    labels: list[int] = []
    for label, name in enumerate(classes):
        entries = sorted(p for p in (folder / name).iterdir() if not p.name.startswith("."))
        if not entries:
            raise UsageError(f"class folder {folder / name} is empty: add PNG/JPEG images or remove it")
        for entry in entries:
            if not entry.is_file():
                raise UsageError(f"{entry} is not an image file: class folders hold images only, no sub-folders")
        files += entries
        labels += [label] * len(entries)
    return files, np.asarray(labels, dtype=np.int64)


def _check_signature(path: Path) -> None:
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as exc:
        raise UsageError(f"{path} cannot be read ({exc.strerror}): make it readable or remove it") from None
    if not head.startswith(_SIGNATURES):
        raise UsageError(_not_an_image(path))


def _not_an_image(path: Path) -> str:
    return f"{path} is not an image: class folders may hold only PNG and JPEG files"


def _decode_all(files: list[Path], size: tuple[int, int], channels: int) -> np.ndarray:
    out = np.empty((len(files), channels, *size), dtype=np.uint8)
    for i, path in enumerate(files):
        out[i] = _decode(path, size, channels)
    return out


def _decode(path: Path, size: tuple[int, int], channels: int) -> np.ndarray:
    """One image as uint8 [C, H, W]; anything that is not a readable PNG/JPEG is a UsageError."""
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        raise UsageError(_NEEDS_PILLOW) from None
    if channels not in (1, 3):
        raise UsageError(f"image folders give 1 or 3 channels, the workload wants {channels}")
    try:
        with Image.open(path) as opened:
            if opened.format not in IMAGE_FORMATS:
                raise UsageError(f"{path} is a {opened.format} image: only PNG and JPEG are read")
            height, width = size
            image = opened.convert("RGB" if channels == 3 else "L").resize((width, height), Image.Resampling.BILINEAR)
            pixels = np.asarray(image, dtype=np.uint8)
    except UnidentifiedImageError:
        raise UsageError(_not_an_image(path)) from None
    except (OSError, SyntaxError, ValueError) as error:
        # Pillow reports truncated or damaged files with OSError/SyntaxError/ValueError.
        raise UsageError(f"{path} is not a readable PNG or JPEG image ({error})") from None
    return pixels[None] if channels == 1 else pixels.transpose(2, 0, 1)
