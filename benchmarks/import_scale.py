"""How long `rigbench results import` takes on a bundle, this checkout side by side with another
version of rigbench's code, and whether both store the same rows.

    python benchmarks/store_scale.py --results 20000 --db sqlite:////tmp/scale/big.db --only none
    rigbench results export --format bundle -o /tmp/scale/big.json --db sqlite:////tmp/scale/big.db
    git archive 3e47166 src | tar -x -C /tmp/before       # the code to compare with (its src/)
    python benchmarks/import_scale.py /tmp/scale/big.json --before /tmp/before/src

Each version imports the bundle into a new SQLite database, then imports it again into that
database (every result skipped): wall time, CPU time (user and system, which moves less on a
busy machine) and peak RSS, best of --repeat, and this checkout's over the other's. Then both
databases are exported again as bundles, which must be the same but for their time stamp.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile

from store_scale import _timed  # this folder is on the path of a script run from it


def _import(bundle: str, db: str, env: dict[str, str], repeat: int) -> list[tuple[float, float, float]]:
    """Best (wall, CPU, RSS) of importing into a new database, then of importing it again."""
    fresh = []
    for _ in range(repeat):
        if os.path.exists(db):
            os.remove(db)
        fresh.append(_timed(["results", "import", bundle, "--db", db], env))
    again = [_timed(["results", "import", bundle, "--db", db], env) for _ in range(repeat)]
    return [min(fresh), min(again)]


def _exported(db: str, out: str, env: dict[str, str]) -> bytes:
    """A digest of the database's bundle but its time stamp (read a line at a time: a process
    this one starts later would report this one's peak RSS as its own, the fork's copy)."""
    subprocess.run([sys.executable, "-m", "rigbench", "results", "export", "--format", "bundle", "-o", out,
                    "--db", db], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    digest = hashlib.sha256()
    with open(out, "rb") as file:
        for line in file:
            if not line.startswith(b' "exported_at"'):
                digest.update(line)
    os.remove(out)
    return digest.digest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bundle")
    parser.add_argument("--before", help="another version's src folder (its rigbench package is imported from it)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="import-scale-")
    versions = {"this checkout": dict(os.environ)}
    if args.before:
        versions["--before"] = {**os.environ, "PYTHONPATH": os.path.abspath(args.before)}
    cells: dict[str, list[str]] = {"import into a new database": [], "import again (all skipped)": []}
    cpu: dict[str, list[float]] = {name: [] for name in cells}
    exports = []
    for k, (version, env) in enumerate(versions.items()):
        db = os.path.join(work, f"{k}.db")
        for name, (wall, seconds, rss) in zip(cells, _import(args.bundle, db, env, args.repeat), strict=True):
            cells[name].append(f"{wall:7.1f} s, {seconds:7.1f} s CPU, {rss:5.0f} MiB")
            cpu[name].append(seconds)
            print(f"  {version}: {name}: {cells[name][-1]}", flush=True)
        exports.append(_exported(db, os.path.join(work, f"{k}.json"), env))
    print(f"\n{'':28}" + "".join(f"{v:>38}" for v in versions) + ("   CPU ratio" if args.before else ""))
    for name, row in cells.items():
        ratio = f"{cpu[name][0] / cpu[name][1]:12.2f}" if args.before else ""
        print(f"{name:28}" + "".join(f"{c:>38}" for c in row) + ratio)
    if args.before:
        print("rows stored: " + ("the same (both databases export the same bundle)" if exports[0] == exports[1]
                                 else "DIFFERENT: compare the exports in " + work))


if __name__ == "__main__":
    main()
