"""analysis/energy.py: the Pareto front, samples per joule, notes and joule formatting, by hand."""

import pytest

from rigbench.analysis.energy import dominates, energy_notes, format_joules, has_energy, pareto_front, samples_per_joule
from tests.unit.test_report_data import make_result


def test_one_point_is_its_own_front():
    assert pareto_front([(1.0, 5.0)]) == [0]
    assert pareto_front([]) == []


def test_dominated_points_are_left_out_and_the_front_is_sorted_by_time():
    # (seconds per sample, J per sample): 1 is beaten by 0 on both; 3 by 2 on both; 4 only by 0 on energy at equal time
    points = [(1.0, 1.0), (2.0, 3.0), (0.5, 2.0), (0.8, 2.5), (1.0, 1.5), (3.0, 0.5)]
    assert pareto_front(points) == [2, 0, 5]


def test_ties():
    # identical points dominate neither each other: both stay on the front
    assert pareto_front([(1.0, 2.0), (1.0, 2.0), (2.0, 3.0)]) == [0, 1]
    # equal on one coordinate, better on the other: the worse one is dominated
    assert pareto_front([(1.0, 2.0), (1.0, 1.0)]) == [1]
    assert pareto_front([(2.0, 1.0), (1.0, 1.0)]) == [1]
    assert dominates((1.0, 1.0), (1.0, 2.0)) and not dominates((1.0, 2.0), (1.0, 2.0))
    assert not dominates((1.0, 3.0), (2.0, 1.0)) and not dominates((2.0, 1.0), (1.0, 3.0))


def test_samples_per_joule_is_derived_from_the_one_stored_fact():
    assert samples_per_joule(0.004) == pytest.approx(250.0)
    assert samples_per_joule(None) is None and samples_per_joule(0.0) is None
    assert has_energy(make_result(energy_per_sample_j=0.01)) and not has_energy(make_result())


def test_notes_are_deduplicated_in_order():
    results = [make_result(energy_note="b"), make_result(energy_note="a"), make_result(energy_note="b "),
               make_result()]
    assert energy_notes(results) == ["b", "a"]


@pytest.mark.parametrize("joules,text", [(12.345, "12.3 J"), (1.0, "1 J"), (0.00153, "1.53 mJ"),
                                         (0.0009, "900 µJ"), (4e-8, "40 nJ")])
def test_format_joules(joules, text):
    assert format_joules(joules) == text
