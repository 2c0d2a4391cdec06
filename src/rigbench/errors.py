"""Exceptions that carry a meaning for the user or for a trial's status."""


class UsageError(Exception):
    """Bad input from the user: the CLI prints the message on one line and exits with 2."""


class UnsupportedError(Exception):
    """This combination (workload, device, precision...) cannot run here: status `unsupported`."""


class DivergedError(Exception):
    """The loss became NaN or infinite: status `diverged`."""

    def __init__(self, message: str, step: int):
        super().__init__(message)
        self.step = step
