"""Adaptive reward weights (opt-in: `adaptive_reward_weights: true` in the recipe).

At every log, each reward's success rate is its logged mean placed in its documented range
(0 at the bottom, 1 at the top). A reward the policy rarely satisfies (success below
`adaptive_low`) gets more weight, one it already masters (above `adaptive_high`) less, by the
factor `adaptive_factor` per log, within `adaptive_min_scale`..`adaptive_max_scale` times its
recipe weight. Rewards without a documented range (dotted paths, reward models) keep theirs.
Each change is logged and appended to `output_dir/reward_weights.jsonl`.

The weights are part of the run's state: each checkpoint saves them (`trainer_state.json`,
`stateful_callbacks`) and a resumed run continues with the checkpoint's weights (a `resumed` line
in reward_weights.jsonl says which), not the recipe's. The recipe's weights stay the bounds.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from transformers import TrainerCallback

logger = logging.getLogger(__name__)

WEIGHTS_LOG = "reward_weights.jsonl"
STATE_KEY = "grpo_kit.adaptive_reward_weights"  # in trainer_state.json's stateful_callbacks


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
        self.names = list(names)
        self.ranges = ranges  # RewardRange or None per reward
        self.initial = [float(w) for w in weights.tolist()]
        self.policy = policy
        self.path = Path(output_dir) / WEIGHTS_LOG

    def on_train_begin(self, args, state, control, **kwargs):
        """On a resume, take back the weights saved in the checkpoint's state."""
        saved = (getattr(state, "stateful_callbacks", None) or {}).get(STATE_KEY) or {}
        weights = saved.get("weights")
        if saved.get("names") == list(self.names) and isinstance(weights, list):
            for index, weight in enumerate(weights):
                self.weights[index] = float(weight)
            if state.is_world_process_zero:
                current = {n: round(float(w), 6) for n, w in zip(self.names, weights, strict=True)}
                logger.info("reward weights restored from the checkpoint: %s", current)
                self._append({"step": state.global_step, "event": "resumed", "weights": current})
        elif saved:
            logger.warning(
                "the checkpoint's adaptive reward weights are for the rewards %s, not %s: "
                "starting from the recipe's weights",
                saved.get("names"),
                self.names,
            )
        self._remember(state)
        return control

    def _remember(self, state) -> None:
        """The current weights, in the state a checkpoint saves (trainer_state.json)."""
        if getattr(state, "stateful_callbacks", None) is None:
            state.stateful_callbacks = {}
        weights = [float(w) for w in self.weights.tolist()]
        state.stateful_callbacks[STATE_KEY] = {"names": list(self.names), "weights": weights}

    def _append(self, event: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(event) + "\n")

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
                self._append({"step": state.global_step, "reward": name, "old": old, "new": new,
                              "success": success})  # fmt: skip
        self._remember(state)
        return control
