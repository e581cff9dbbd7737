"""Smoke mode (`--smoke`): run any recipe offline on a tiny local model, the sample data and CPU.

The overrides below replace only what cannot run on a laptop CPU without downloads (model, data,
precision, GPU-only features, size); the task, prompts, rewards and LoRA settings of the recipe
stay as they are, so a smoke run exercises the same code path as the real one.
"""

from __future__ import annotations

import logging
from pathlib import Path

from .project import SAMPLE_DATA

logger = logging.getLogger(__name__)

TINY_MODEL_DIR = Path("outputs/tiny-model")
SMOKE_OUTPUT_DIR = Path("outputs/smoke")

SMOKE_OVERRIDES: dict[str, str] = {
    "model_name_or_path": str(TINY_MODEL_DIR),
    "dataset_name": SAMPLE_DATA,
    "max_train_samples": "16",
    "output_dir": str(SMOKE_OUTPUT_DIR),
    # CPU, full precision, no GPU-only features.
    "use_cpu": "true",
    "bf16": "false",
    "fp16": "false",
    "dtype": "float32",
    "use_vllm": "false",
    "load_in_4bit": "false",
    "load_in_8bit": "false",
    "optim": "adamw_torch",
    "activation_checkpointing": "false",
    "warmup_steps": "0",
    # Small and short: 2 optimizer steps of 4 completions (one prompt x 4 generations).
    "max_steps": "2",
    "per_device_train_batch_size": "4",
    "gradient_accumulation_steps": "1",
    "num_generations": "4",
    "max_completion_length": "16",
    "max_prompt_tokens": "1024",
    "logging_steps": "1",
    "save_strategy": "no",
    "report_to": "none",
    "log_completions": "false",
    "dataloader_num_workers": "0",
}


def smoke_arguments() -> list[str]:
    """Command-line overrides for a smoke run; builds the tiny model on first use."""
    if not (TINY_MODEL_DIR / "config.json").is_file():
        from .tiny_model import build_tiny_model

        logger.info("smoke: building the tiny offline model in %s", TINY_MODEL_DIR)
        build_tiny_model(TINY_MODEL_DIR)
    args: list[str] = []
    for key, value in SMOKE_OVERRIDES.items():
        args += [f"--{key}", value]
    return args
