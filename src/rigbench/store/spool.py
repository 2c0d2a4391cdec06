"""The spool: finished results that their database could not take, kept as files until it can.

A trial's result is measured once; when its database is unreachable or busy past the wait
(store/waiting.py) or refuses the write, Store.add_result writes it here instead of losing it:
one JSON file per result, holding the Result (raw samples included) and its run's record
(id, time, command as stored: passwords masked; machine), so it can be stored with its run.

    <spool root>/<database key>/<time>-<run id>-<random>.json
    {"format": "rigbench-spool", "version": 1, "database": URL (masked), "reason": why,
     "spooled_at": time, "run": {"id", "created_at", "command", "machine"}, "result": {...}}

The root is $RIGBENCH_SPOOL_DIR, else `spool/` in the user's data directory (platformdirs),
beside the default database. The key is a hash of what names the database (a SQLite file's
absolute path; a server's host, port and database name), so every command that opens that
database finds its files: Store imports them when it opens (store/db.py), and
`rigbench results flush` does it on demand. A file is written whole (a temporary name, then a
rename) and deleted only after the transaction that stored its result committed; importing is
idempotent (a result already stored, `rows.trial_key`, is skipped), so a crash or two
importers at once store each result exactly once.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy.engine import make_url

from rigbench.errors import UsageError
from rigbench.spec import Result
from rigbench.store.engine import display_url, mask_command, sqlite_file
from rigbench.store.lenient import read_result
from rigbench.timestamps import now_iso

SPOOL_ENV = "RIGBENCH_SPOOL_DIR"
FORMAT = "rigbench-spool"
VERSION = 1
#: where an unreadable spool file is moved aside (kept for a person to look at, not retried)
UNREADABLE_SUFFIX = ".unreadable"


def spool_root() -> Path:
    """$RIGBENCH_SPOOL_DIR if set, else `spool` in the user's data directory."""
    override = os.environ.get(SPOOL_ENV)
    return Path(override).expanduser() if override else Path(platformdirs.user_data_dir("rigbench")) / "spool"


def database_key(url: str) -> str:
    """A short stable name for the database `url` (real or masked) names: the same for every
    spelling of it (relative path, password, driver), different for different databases."""
    path = sqlite_file(url)
    if path is not None:
        identity = f"sqlite:{path.expanduser().resolve()}"
    else:
        parsed = make_url(url)
        identity = f"{parsed.get_backend_name()}://{parsed.host or ''}:{parsed.port or ''}/{parsed.database or ''}"
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


def folder(url: str) -> Path:
    """The spool folder of the database `url`."""
    return spool_root() / database_key(url)


def pending(url: str) -> list[Path]:
    """The spooled result files of the database `url`, oldest first; [] when there are none
    (or the folder cannot be read: then nothing was ever spooled there by this user)."""
    try:
        return sorted(p for p in folder(url).iterdir() if p.suffix == ".json" and p.is_file())
    except OSError:
        return []


def spooled_elsewhere(url: str) -> int:
    """How many results are spooled for databases other than `url` (so `results flush` can
    say that its --db is not theirs)."""
    own = database_key(url)
    try:
        return sum(1 for d in spool_root().iterdir() if d.is_dir() and d.name != own
                   for p in d.iterdir() if p.suffix == ".json")
    except OSError:
        return 0


def write(url: str, result: Result, run: dict[str, Any], reason: str) -> Path:
    """Keep `result` and its run's record in the spool of `url`; its path. UsageError naming
    the folder and the variable that moves it when the folder cannot be written."""
    directory = folder(url)
    stamp = "".join(c for c in result.created_at if c.isalnum())[:20]
    name = f"{stamp}-{''.join(c for c in result.run_id if c.isalnum())[:36]}-{uuid.uuid4().hex[:8]}.json"
    record = {"format": FORMAT, "version": VERSION, "database": display_url(url), "reason": reason,
              "spooled_at": now_iso(), "run": {**run, "command": mask_command(str(run.get("command", "")))},
              "result": result.model_dump(mode="json", exclude={"id"})}
    tmp = directory / f".{name}.tmp"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(record, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, directory / name)  # whole or absent: an importer never reads half a file
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise UsageError(f"cannot keep the result in the spool folder {directory} ({exc.strerror}): "
                         f"set {SPOOL_ENV} to a folder you can write") from None
    return directory / name


def read(path: Path) -> tuple[dict[str, Any], Result]:
    """(run record, Result) of one spooled file; ValueError saying why it cannot be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} file")
        run, result = data["run"], read_result(data["result"])
        if not isinstance(run, dict) or run.get("id") != result.run_id:
            raise ValueError("its run record does not match its result")
    except (OSError, KeyError, TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise ValueError(f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}") from None
    return run, result


def set_aside(path: Path) -> Path | None:
    """Move an unreadable spool file out of the import's way (kept for a person to read)."""
    target = path.with_name(path.name + UNREADABLE_SUFFIX)
    try:
        os.replace(path, target)
    except OSError:
        return None
    return target
