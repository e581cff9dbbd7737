"""The default options of the steps a stage can run besides GRPO: `grpo filter`'s band (a
stage's `refilter`) and `grpo warmup`'s fine-tune (a stage's `warmup`). The commands, `grpo
stages` and the template (which writes them out in configs/stages.yaml for the user to change)
read them here."""

from __future__ import annotations

__all__ = ["FILTER", "WARMUP", "WARMUP_ENTROPY_MARGIN", "warmup_batch"]

# Completions per prompt and the band of pass rates kept (grpo filter, a stage's `refilter`).
FILTER = {"k": 8, "min": 0.1, "max": 0.9}
# The format warm-up: completions trained on ("a few dozen"), epochs, and the learning rate of a
# LoRA SFT on a few dozen examples (SmolLM2-135M: the format in 18 steps).
WARMUP = {"examples": 32, "epochs": 3.0, "learning_rate": 5e-4}
# The warm-up's batch is its own, from the number of examples (gradient accumulation 1), never
# GRPO's per_device_train_batch_size: SmolLM2-135M, 32 examples x 3 epochs at GRPO's batch 16
# was 6 steps (loss stuck at 0.31, the strict format on 69% of answers), at 8 12 steps (0.015).
WARMUP_MAX_BATCH = 8
# The warm-up stops once the token entropy of its completions falls below the health monitor's
# entropy minimum (the recipe's health_entropy_min) times this: GRPO needs a policy whose
# completions still differ (SmolLM2-135M, warmed up to loss 0.015, began GRPO at entropy 0.028).
WARMUP_ENTROPY_MARGIN = 2.0


def warmup_batch(examples: int) -> int:
    """The warm-up's default batch for `examples` completions: a quarter of them, 1 to
    WARMUP_MAX_BATCH (so a few dozen examples make a dozen steps over 3 epochs)."""
    return min(WARMUP_MAX_BATCH, max(1, examples // 4))
