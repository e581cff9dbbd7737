"""Adaptive reward weights: up when a reward is rarely met, down when mastered, within bounds."""

import pytest
from grpo_kit.callbacks import adaptive_weights as aw

POLICY = aw.Policy(low=0.2, high=0.8, factor=2.0, min_scale=0.5, max_scale=4.0)


def test_success_rate_places_the_mean_in_the_rewards_range():
    assert aw.success_rate(0.5, 0.0, 1.0) == 0.5
    assert aw.success_rate(-0.5, -1.0, 1.0) == 0.25
    assert aw.success_rate(3.0, 0.0, 1.0) == 1.0 and aw.success_rate(-3.0, 0.0, 1.0) == 0.0


@pytest.mark.parametrize(
    ("weight", "success", "expected"),
    [(1.0, 0.1, 2.0), (1.0, 0.5, 1.0), (1.0, 0.9, 0.5), (4.0, 0.0, 4.0), (0.5, 1.0, 0.5)],
)
def test_next_weight(weight, success, expected):
    assert aw.next_weight(weight, 1.0, success, POLICY) == pytest.approx(expected)


def test_weights_stay_within_bounds_over_many_logs():
    weight = 1.0
    for _ in range(50):
        weight = aw.next_weight(weight, 1.0, 0.0, POLICY)
    assert weight == pytest.approx(4.0)
    for _ in range(50):
        weight = aw.next_weight(weight, 1.0, 1.0, POLICY)
    assert weight == pytest.approx(0.5)
