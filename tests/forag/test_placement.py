"""Placement rules on a hand-written sigma (token -> sentence), settings.PLACEMENTS."""
from __future__ import annotations

import pytest

from factrl.methods.forag.placement import place_rewards
from factrl.methods.forag.settings import FoRAGSettings

# tokens:   0     1  2  3     4  5  6     7
SIGMA = [None, 0, 0, None, 1, 1, None, None]
VALUES = {0: [1.0, -1.0, 1.0], 1: [-1.0]}


@pytest.mark.parametrize("settings, want", [
    ({}, [0, 0, 1 / 3, 0, 0, -1, 0, 0]),
    ({"aggregation": "sum"}, [0, 0, 1, 0, 0, -1, 0, 0]),
    ({"placement": "spread"}, [0, 1 / 6, 1 / 6, 0, -0.5, -0.5, 0, 0]),
    ({"placement": "final_token"}, [0, 0, 0, 0, 0, 0, 0, 0.0]),  # (1 - 1 + 1 - 1) / 4
    ({"placement": "final_token", "aggregation": "sum", "supported": 2.0}, [0, 0, 0, 0, 0, 0, 0, 2.0]),
])
def test_placements(settings, want):
    s = FoRAGSettings.from_mapping(**settings)
    values = {i: [s.supported if v > 0 else s.unsupported for v in vs] for i, vs in VALUES.items()}
    rewards, unplaced = place_rewards(len(SIGMA), SIGMA, values, s)
    assert rewards == pytest.approx(want) and unplaced == 0


def test_sentence_without_tokens_goes_to_the_final_token_and_is_counted():
    rewards, unplaced = place_rewards(len(SIGMA), SIGMA, {0: [1.0], 2: [-1.0]}, FoRAGSettings.from_mapping())
    assert rewards == pytest.approx([0, 0, 1, 0, 0, 0, 0, -1]) and unplaced == 1


def test_no_sigma_or_no_values():
    assert place_rewards(4, None, {0: [1.0], 1: [-1.0, -1.0]}, FoRAGSettings.from_mapping()) == ([0, 0, 0, -1 / 3], 0)
    assert place_rewards(3, [0, 0, 0], {}, FoRAGSettings.from_mapping()) == ([0.0] * 3, 0)
    with pytest.raises(ValueError, match="sigma has 2 entries for 3 tokens"):
        place_rewards(3, [0, 0], {0: [1.0]}, FoRAGSettings.from_mapping())
