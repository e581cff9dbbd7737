"""The warm-up's entropy floor: a supervised fine-tune stopped before it makes the policy
deterministic.

The format warm-up (`grpo warmup`) teaches a few dozen completions; trained too long, the model
reproduces them token for token and GRPO starts from a policy whose `num_generations`
completions of a prompt no longer differ: nothing to learn from, and the health monitor's entropy
warning at GRPO's first step (SmolLM2-135M warmed up to loss 0.015 began GRPO at entropy 0.028).
TRL's `SFTTrainer` logs `entropy`, the mean token entropy (nats) of the completions it trains on;
`EntropyFloor` stops the fine-tune at the first log below `floor` (0: never), and keeps what it
saw for the warm-up's run record.
"""

from __future__ import annotations

import logging
import math

from transformers import TrainerCallback

__all__ = ["ENTROPY_KEY", "EntropyFloor"]

logger = logging.getLogger(__name__)

ENTROPY_KEY = "entropy"  # what SFTTrainer logs: mean token entropy over the completion tokens


class EntropyFloor(TrainerCallback):
    """Stops training at the first log whose `entropy` is below `floor` (a positive number;
    0 turns the floor off). `first`/`last`: the entropies logged; `stopped_at`: the step it
    stopped at (None: it did not)."""

    def __init__(self, floor: float):
        if not floor >= 0:
            raise ValueError(f"the entropy floor must be a number >= 0, got {floor}")
        self.floor = float(floor)
        self.first: float | None = None
        self.last: float | None = None
        self.stopped_at: int | None = None

    def on_log(self, args, state, control, logs=None, **kwargs):
        value = (logs or {}).get(ENTROPY_KEY)
        if not isinstance(value, int | float) or not math.isfinite(value):
            return control
        self.first = value if self.first is None else self.first
        self.last = value
        if self.floor and value < self.floor and self.stopped_at is None:
            self.stopped_at = state.global_step
            if state.is_world_process_zero:
                logger.warning(
                    "warm-up: token entropy %.3g < %g at step %d: stopping before the policy "
                    "becomes deterministic (GRPO needs completions that differ)",
                    value, self.floor, state.global_step,
                )  # fmt: skip
            control.should_training_stop = True
        return control
