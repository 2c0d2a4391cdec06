"""Energy as the views show it: samples per joule, the time-versus-energy Pareto front, the
reasons energy is missing, and joules written with an SI prefix. Pure functions, no I/O.

The one stored fact is `Metrics.energy_per_sample_j` (metrics.py). Samples per joule is its
inverse, derived where it is shown and never stored, so the two can never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rigbench.spec import Result


def samples_per_joule(energy_per_sample_j: float | None) -> float | None:
    """1 / J per sample; None when energy was not measured (or is not positive)."""
    if energy_per_sample_j is None or energy_per_sample_j <= 0:
        return None
    return 1.0 / energy_per_sample_j


def has_energy(r: Result) -> bool:
    """A measured (never estimated) energy per sample is stored for the trial."""
    return samples_per_joule(r.metrics.energy_per_sample_j) is not None


def energy_notes(results: Iterable[Result]) -> list[str]:
    """The trials' `energy_note`s (why a source was not read), deduplicated, in first-seen order."""
    return list(dict.fromkeys(n.strip() for r in results if (n := r.metrics.energy_note) and n.strip()))


def format_joules(j: float) -> str:
    """Joules with an SI prefix and 3 significant digits: 0.00153 -> "1.53 mJ"."""
    for factor, unit in ((1.0, "J"), (1e-3, "mJ"), (1e-6, "µJ")):
        if abs(j) >= factor:
            return f"{j / factor:.3g} {unit}"
    return f"{j / 1e-9:.3g} nJ"


def dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """`a` beats `b`: no worse on both coordinates (lower is better) and better on one."""
    return a[0] <= b[0] and a[1] <= b[1] and a != b


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point dominates, both coordinates lower-is-better
    (e.g. seconds per sample and joules per sample), sorted by the first coordinate, then the
    second. Equal points dominate neither each other: all copies of a front point are on it."""
    front = [i for i, p in enumerate(points) if not any(dominates(q, p) for q in points)]
    return sorted(front, key=lambda i: (points[i], i))
