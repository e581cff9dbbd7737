"""Smoke mode: run any recipe offline on a tiny local model, the sample data and the CPU.

`--smoke` (an argument of `train`, `doctor`, ...) applies the overrides below: they replace only
what cannot run on a laptop CPU without downloads (model, data, precision, GPU-only features,
size); the task, prompts, rewards and LoRA settings of the recipe stay as they are, so a smoke run
exercises the same code path as the real one.

`make smoke` (`python -m <package>.smoke`) runs the whole pipeline that way in one process:
train 2 steps -> merge (with its check) -> infer.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from ..project import EXAMPLE_PROMPT, SAMPLE_DATA

logger = logging.getLogger(__spec__.name)  # the real name also under `python -m`

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
    "load_in_4bit": "false",
    "load_in_8bit": "false",
    "optim": "adamw_torch",
    "activation_checkpointing": "false",  # transformers 5.24 (gradient_checkpointing before)
    "gradient_checkpointing": "false",
    "fast_inference": "false",  # Unsloth backend
    "max_seq_length": "2048",  # Unsloth backend
    "use_vllm": "false",
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


def smoke_arguments(fields: set[str]) -> list[str]:
    """Command-line overrides for a smoke run (those among the parser's `fields`); builds the
    tiny model on first use."""
    if not (TINY_MODEL_DIR / "config.json").is_file():
        from .tiny_model import build_tiny_model

        logger.info("smoke: building the tiny offline model in %s", TINY_MODEL_DIR)
        build_tiny_model(TINY_MODEL_DIR)
    args: list[str] = []
    for key, value in SMOKE_OVERRIDES.items():
        if key in fields:
            args += [f"--{key}", value]
    return args


def pipeline(argv: Sequence[str] | None = None) -> list[str]:
    """Train -> merge -> infer on the tiny model; returns the generated answers."""
    from .. import infer, merge, train

    parser = argparse.ArgumentParser(
        prog="python -m {{ cookiecutter.package_name }}.tools.smoke",
        description="Offline end-to-end check: tiny model, train -> merge -> infer, on the CPU.",
    )
    parser.add_argument("--config", default="configs/grpo.yaml", help="the recipe to smoke-test")
    parser.add_argument("--prompt", default=None, help="prompt for the inference step")
    args, overrides = parser.parse_known_args(argv)
    shutil.rmtree(SMOKE_OUTPUT_DIR, ignore_errors=True)
    print(f"smoke 1/3: train 2 steps with {args.config} on the tiny model", flush=True)
    train.train(["--config", args.config, "--smoke", *overrides])
    print("smoke 2/3: merge the adapter and check the merged model", flush=True)
    merged = merge.merge([str(SMOKE_OUTPUT_DIR), "--max-new-tokens", "8"])
    print("smoke 3/3: generate with the merged model", flush=True)
    prompt = args.prompt or EXAMPLE_PROMPT
    return infer.infer(["--model", str(merged), "--prompt", prompt, "--max-new-tokens", "16"])


def main(argv: Sequence[str] | None = None) -> int:
    from ..errors import run

    return run(pipeline, argv)


if __name__ == "__main__":
    sys.exit(main())
