"""The default options of the steps a stage can run besides GRPO: `grpo filter`'s band (a
stage's `refilter`) and `grpo warmup`'s fine-tune (a stage's `warmup`). The commands, `grpo
stages` and the template (which writes them out in configs/stages.yaml for the user to change)
read them here."""

from __future__ import annotations

__all__ = ["FILTER", "WARMUP"]

# Completions per prompt and the band of pass rates kept (grpo filter, a stage's `refilter`).
FILTER = {"k": 8, "min": 0.1, "max": 0.9}
# The format warm-up: completions trained on ("a few dozen"), epochs, and the learning rate of a
# LoRA SFT on a few dozen examples (SmolLM2-135M: the format in 18 steps).
WARMUP = {"examples": 32, "epochs": 3.0, "learning_rate": 5e-4}
