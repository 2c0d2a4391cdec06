"""Where rigbench keeps files of its own (caches), apart from the results database."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def cache_dir() -> Path:
    """$RIGBENCH_CACHE_DIR if set, else the platform's user cache dir for rigbench."""
    override = os.environ.get("RIGBENCH_CACHE_DIR")
    return Path(override) if override else Path(platformdirs.user_cache_dir("rigbench"))
