"""Adaptive reward weights (opt-in: `adaptive_reward_weights: true` in the recipe).

At every log, each reward's success rate is its logged mean placed in its documented range
(0 at the bottom, 1 at the top). A reward the policy rarely satisfies (success below
`adaptive_low`) gets more weight, one it already masters (above `adaptive_high`) less, by the
factor `adaptive_factor` per log, within `adaptive_min_scale`..`adaptive_max_scale` times its
recipe weight. Rewards without a documented range (dotted paths, reward models) keep theirs.
Each change is logged and appended to `output_dir/reward_weights.jsonl`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from transformers import TrainerCallback

logger = logging.getLogger(__name__)

WEIGHTS_LOG = "reward_weights.jsonl"


@dataclass(frozen=True)
class Policy:
    low: float = 0.2
    high: float = 0.8
    factor: float = 1.25
    min_scale: float = 0.25
    max_scale: float = 4.0


def success_rate(mean: float, low: float, high: float) -> float:
    return min(1.0, max(0.0, (mean - low) / (high - low))) if high > low else 0.0


def next_weight(weight: float, initial: float, success: float, policy: Policy) -> float:
    """The weight after one log: up when the reward is rarely met, down when mostly met."""
    if success < policy.low:
        weight *= policy.factor
    elif success > policy.high:
        weight /= policy.factor
    bounds = sorted((initial * policy.min_scale, initial * policy.max_scale))
    return min(bounds[1], max(bounds[0], weight))


class AdaptiveRewardWeights(TrainerCallback):
    """Changes `trainer.reward_weights` in place (a tensor GRPOTrainer multiplies rewards by)."""

    def __init__(self, trainer, names: list[str], ranges: list, policy: Policy, output_dir: str):
        weights = getattr(trainer, "reward_weights", None)
        if weights is None:
            raise AttributeError("this trainer has no reward_weights to adapt")
        self.weights = weights
        self.names = names
        self.ranges = ranges  # RewardRange or None per reward
        self.initial = [float(w) for w in weights.tolist()]
        self.policy = policy
        self.path = Path(output_dir) / WEIGHTS_LOG

    def on_log(self, args, state, control, logs=None, **kwargs):
        logs = logs or {}
        for index, (name, limits) in enumerate(zip(self.names, self.ranges, strict=True)):
            mean = logs.get(f"rewards/{name}/mean")
            if limits is None or not isinstance(mean, int | float):
                continue
            success = success_rate(mean, limits.low, limits.high)
            old = float(self.weights[index])
            new = next_weight(old, self.initial[index], success, self.policy)
            if abs(new - old) < 1e-9:
                continue
            self.weights[index] = new
            if state.is_world_process_zero:
                logger.info(
                    "reward weight %s: %.3g -> %.3g (success %.2f) at step %d",
                    name, old, new, success, state.global_step,
                )  # fmt: skip
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as handle:
                    event = {"step": state.global_step, "reward": name, "old": old, "new": new,
                             "success": success}  # fmt: skip
                    handle.write(json.dumps(event) + "\n")
        return control
