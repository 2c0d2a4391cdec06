"""What a recommendation is made of: one `Line` per decision, the `MemoryLimit` a max-batch
search found, and the throughput knee the batch decision reads (analysis/recommend.py holds
the rules; reports/batch_charts.py draws the knee)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rigbench.units import format_bytes

#: The knee: the smallest batch reaching this fraction of the best measured throughput.
KNEE_FRACTION = 0.9

V = TypeVar("V")


def sps_text(value: float | None) -> str:
    """A samples/s figure as the recommendation's lines write it."""
    return "-" if value is None else f"{value:,.1f} samples/s"


@dataclass(frozen=True)
class MemoryLimit:
    """What a max-batch search found on a device (experiments.max_batch.MaxBatchOutcome, or its
    stored probes)."""

    device: str
    largest_ok: int | None
    smallest_oom: int | None
    recommended: int | None  # <= largest_ok, with a safety margin by the memory model
    limit_bytes: int | None
    run_id: str | None = None
    #: why the search ended before its own stopping rule (experiments/max_batch_logic.replay), e.g.
    #: stopped by Ctrl-C mid-bisection; None for a search that ended by it (as far as its probes
    #: show, where `tolerance` is None)
    unfinished: str | None = None
    #: the search's --tolerance as stored with its probes; None for probes stored before it was,
    #: whose completeness is read from the probes alone (a stop mid-bisection reads as complete)
    tolerance: float | None = None
    #: the CPU's limit: "default" (a share of the RAM available when the search ran),
    #: "--memory-limit", or "unknown" (stored before searches said, by a run whose command is not
    #: known); None on a GPU, whose limit is its memory (experiments/search_limits)
    source: str | None = None
    #: the stored searches of the device under other limits, left out ("2.0 GiB (run b)")
    others: tuple[str, ...] = ()

    @property
    def cap(self) -> int | None:
        """The largest batch to recommend: max-batch's recommendation, else its largest ok;
        None where no probe ran out of memory (the search stopped at its reach, e.g. 2x the
        grid's largest batch: that is where it stopped looking, not a limit)."""
        if self.smallest_oom is None:
            return None
        return self.recommended if self.recommended is not None else self.largest_ok

    def text(self) -> str:
        """What the search found, and what it leaves open, as the batch line says it: one that met
        no out-of-memory caps nothing; one that stopped early (`unfinished`) is named so (it is
        used only where no complete search is stored: experiments/search_limits.stored_limit); one
        that ended by its rule short of one sample says to what tolerance, or that its probes alone
        say it ended (stored without its tolerance)."""
        run = f" (run {self.run_id})" if self.run_id else ""
        if self.smallest_oom is None:
            reach = f"up to b{self.largest_ok}, where" if self.largest_ok is not None else "before"
            return self._limits(f"max-batch: no out-of-memory {reach} its search stopped{run}, so it caps nothing")
        text = (f"max-batch: largest that ran {self.largest_ok if self.largest_ok is not None else 'none'}"
                + (f", recommended {self.recommended}" if self.recommended is not None else "")
                + f", first oom {self.smallest_oom}")
        if self.unfinished:
            text += f"; an incomplete search{run}: {self.unfinished} (`rigbench max-batch` runs a complete one)"
        elif self.largest_ok is not None and self.smallest_oom - self.largest_ok > 1:  # not bisected to one sample
            text += (f"; complete to its --tolerance {self.tolerance:g}" if self.tolerance is not None else
                     "; complete as far as its probes show (stored without its --tolerance, so a search stopped "
                     "mid-bisection would read the same)")
        return self._limits(text)

    def _limits(self, text: str) -> str:
        """`text`, and the limit the search ran under, and the searches under others left out."""
        under = self.under()
        if under:
            text += f"; {under}"
        if self.others:
            text += (f"; left out {len(self.others)} search{'es' if len(self.others) > 1 else ''} under other "
                     f"limits: {', '.join(self.others)}")
        return text

    def under(self) -> str | None:
        """The limit the search ran under, in words, where it is the CPU's (a GPU has its memory)."""
        if self.source == "--memory-limit":
            return f"under --memory-limit {format_bytes(self.limit_bytes)}"
        if self.source == "default":
            return f"under the default memory limit ({format_bytes(self.limit_bytes)}, a share of the RAM available then)"
        if self.source == "unknown":
            return (f"under a memory limit of {format_bytes(self.limit_bytes)} (stored without saying whether the default "
                    "or --memory-limit set it: read as the default's)")
        return None

    def row(self) -> dict[str, Any]:
        """The figures the batch line's numbers give (analysis/recommend.decide_batch)."""
        return {"largest_ok": self.largest_ok, "smallest_oom": self.smallest_oom, "recommended": self.recommended,
                "limit_bytes": self.limit_bytes, "run_id": self.run_id, "unfinished": self.unfinished,
                "tolerance": self.tolerance, "source": self.source, "left_out": list(self.others)}


@dataclass
class Line:
    """One decision: its value (None when undecided), the printed text, the figures behind it."""

    decision: str
    value: Any
    text: str
    numbers: dict[str, Any] = field(default_factory=dict)

    def row(self) -> dict[str, Any]:
        return {"decision": self.decision, "value": self.value, "text": self.text, "numbers": self.numbers}


def knee(speeds: Mapping[int, float], fraction: float = KNEE_FRACTION) -> tuple[int, int]:
    """(knee batch, best batch): the smallest batch whose speed is >= fraction x the best.
    Raises ValueError on no speeds."""
    if not speeds:
        raise ValueError("no measured batch sizes")
    best = max(speeds, key=lambda b: speeds[b])
    return min(b for b, s in speeds.items() if s >= fraction * speeds[best]), best


def fitting(speeds: Mapping[int, V], limit: MemoryLimit | None) -> tuple[dict[int, V], list[int]]:
    """(the batches within the memory limit, the ones left out)."""
    if limit is None or limit.cap is None:
        return dict(speeds), []
    return ({b: v for b, v in speeds.items() if b <= limit.cap},
            [b for b in speeds if b > limit.cap])
