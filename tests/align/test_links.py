"""Intersection and the 1-to-1 filter on hand-made links."""

import pytest

from xlt.align.links import check_bounds, intersect, one_to_one
from xlt.errors import DataFormatError


def test_intersection_keeps_the_links_both_directions_agree_on():
    forward = [(0, 0), (1, 1), (1, 2), (2, 3)]
    reverse = [(0, 0), (1, 2), (2, 2), (3, 3)]
    assert intersect(forward, reverse) == [(0, 0), (1, 2)]
    assert intersect(forward, []) == []


def test_one_to_one_drops_every_link_of_a_token_linked_twice():
    # 1 -> {1, 2} (one-to-many) and {3, 4} -> 3 (many-to-one) go; 0-0 and 5-5 stay
    links = [(0, 0), (1, 1), (1, 2), (3, 3), (4, 3), (5, 5)]
    assert one_to_one(links) == [(0, 0), (5, 5)]


def test_one_to_one_of_a_permutation_is_itself_and_ignores_duplicates():
    links = [(2, 0), (0, 1), (1, 2), (0, 1)]
    assert one_to_one(links) == [(0, 1), (1, 2), (2, 0)]


def test_intersection_then_one_to_one_as_the_stage_does():
    forward = [(0, 0), (1, 1), (2, 1)]  # 2-1 is only in forward
    reverse = [(0, 0), (1, 1), (2, 2), (0, 2)]  # 0-2 only in reverse
    assert one_to_one(intersect(forward, reverse)) == [(0, 0), (1, 1)]


def test_a_link_outside_the_sentences_names_file_and_line(tmp_path):
    check_bounds([(0, 0), (2, 1)], 3, 2, tmp_path / "f.pharaoh", 7)
    with pytest.raises(DataFormatError, match=r"f.pharaoh:7: link 3-0 outside"):
        check_bounds([(3, 0)], 3, 2, tmp_path / "f.pharaoh", 7)
