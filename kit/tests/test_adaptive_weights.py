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


class Trainer:
    """What the callback adapts: GRPOTrainer's reward_weights tensor."""

    def __init__(self, *weights):
        import torch

        self.reward_weights = torch.tensor(weights, dtype=torch.float32)


def state(step=0, saved=None):
    from types import SimpleNamespace

    return SimpleNamespace(global_step=step, is_world_process_zero=True,
                           stateful_callbacks=dict(saved or {}))  # fmt: skip


def callback(trainer, tmp_path):
    from grpo_kit.rewards.base import RewardRange

    ranges = [RewardRange(0.0, 1.0), RewardRange(0.0, 1.0)]
    return aw.AdaptiveRewardWeights(trainer, ["acc", "fmt"], ranges, POLICY, str(tmp_path))


def test_the_weights_ride_in_the_checkpoint_and_come_back_on_resume(tmp_path):
    first = Trainer(1.0, 1.0)
    running = state(1)
    weights = callback(first, tmp_path)
    weights.on_train_begin(None, running, None)
    weights.on_log(None, running, None, logs={"rewards/acc/mean": 0.0, "rewards/fmt/mean": 1.0})
    assert first.reward_weights.tolist() == [2.0, 0.5]
    saved = running.stateful_callbacks  # what trainer_state.json of a checkpoint holds
    assert saved[aw.STATE_KEY] == {"names": ["acc", "fmt"], "weights": [2.0, 0.5]}

    again = Trainer(1.0, 1.0)  # the recipe's weights, as a rerun builds the trainer
    resumed = callback(again, tmp_path)
    resumed.on_train_begin(None, state(1, saved), None)
    assert again.reward_weights.tolist() == [2.0, 0.5]
    assert resumed.initial == [1.0, 1.0]  # the bounds stay the recipe's
    lines = (tmp_path / aw.WEIGHTS_LOG).read_text().splitlines()
    assert '"event": "resumed"' in lines[-1]


def test_a_checkpoint_of_other_rewards_leaves_the_recipes_weights(tmp_path, caplog):
    trainer = Trainer(1.0, 1.0)
    other = {aw.STATE_KEY: {"names": ["acc", "length"], "weights": [3.0, 3.0]}}
    callback(trainer, tmp_path).on_train_begin(None, state(5, other), None)
    assert trainer.reward_weights.tolist() == [1.0, 1.0]
    assert "starting from the recipe's weights" in caplog.text
