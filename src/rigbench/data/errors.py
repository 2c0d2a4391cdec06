"""Data-set errors. All are UsageErrors: the user can fix them, and the CLI prints one line."""

from __future__ import annotations

from rigbench.errors import UsageError


class ChecksumError(UsageError):
    """A file's digest is not the published one. Nothing is deleted: the user decides."""

    def __init__(self, file: str, expected: str, got: str, algorithm: str = "md5",
                 hint: str | None = None):
        self.file, self.expected, self.got, self.algorithm = file, expected, got, algorithm
        advice = hint or "it is damaged or a different version: delete it and run again to re-fetch it"
        super().__init__(f"{file}: {algorithm} is {got}, expected {expected}; {advice}")


class CorruptFileError(UsageError):
    """A file does not hold what its format promises (truncated, wrong magic, bad sizes)."""

    def __init__(self, file: str, reason: str):
        self.file, self.reason = file, reason
        super().__init__(f"{file} is corrupt or truncated ({reason}); delete it and fetch it again")


class DownloadError(UsageError):
    """A URL could not be fetched (offline, refused, HTTP error). Any `.part` is kept to resume."""

    def __init__(self, url: str, dest: str, reason: str):
        self.url, self.dest, self.reason = url, dest, reason
        super().__init__(f"cannot download {url} ({reason}); fetch it by hand and save it as {dest}")


class CorpusMismatchError(UsageError):
    """Files of a pinned corpus (pysrc) are missing or not the bytes its manifest names.

    `differ` holds every (relative path, "missing" | "changed"); the message names the first few.
    Training on the files anyway would silently be another corpus, so nothing is loaded.
    """

    SHOWN = 5

    def __init__(self, corpus: str, root: str, differ: list[tuple[str, str]], total: int, made_from: str,
                 advice: str):
        self.corpus, self.root, self.differ, self.total = corpus, root, differ, total
        shown = ", ".join(f"{path} ({why})" for path, why in differ[: self.SHOWN])
        more = f" and {len(differ) - self.SHOWN} more" if len(differ) > self.SHOWN else ""
        super().__init__(f"{corpus}: {len(differ)} of {total} files under {root} are not the ones its manifest "
                         f"pins (made from {made_from}): {shown}{more}; {advice}")
