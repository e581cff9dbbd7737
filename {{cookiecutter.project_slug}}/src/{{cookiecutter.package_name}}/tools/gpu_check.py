"""Check the memory estimate on a real GPU (`make gpu-check`).

Runs a few training steps of the recipe with this process capped to the tier's memory (so a
bigger card behaves like the tier's), then reports the peak memory PyTorch allocated and the
card's own used memory next to the template's estimate. Any recipe field can be overridden, e.g.
`--model_name_or_path Qwen/Qwen2.5-0.5B-Instruct` to check a small model quickly. Needs a CUDA
GPU (it exits with an error elsewhere).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from .. import project
from ..errors import UserError, run

GIB = 1024**3


def parse_args(argv: Sequence[str] | None):
    parser = argparse.ArgumentParser(
        prog="python -m {{ cookiecutter.package_name }}.tools.gpu_check",
        description="Train a few steps under the tier's memory cap; report peak vs estimate.",
    )
    parser.add_argument("--steps", type=int, default=3, help="optimizer steps (default 3)")
    parser.add_argument("--report", type=Path, help="also write the figures as JSON here")
    return parser.parse_known_args(argv)


def gpu_check(argv: Sequence[str] | None = None) -> dict:
    import torch

    from .. import train

    args, overrides = parse_args(argv)
    if not torch.cuda.is_available():
        raise UserError("gpu_check needs a CUDA GPU; on this machine use `make smoke` instead")
    total = torch.cuda.get_device_properties(0).total_memory
    budget = min(total, project.TIER_MEMORY_GIB * GIB)
    torch.cuda.set_per_process_memory_fraction(budget / total, 0)
    torch.cuda.reset_peak_memory_stats()
    recipe = [] if "--config" in overrides else ["--config", "configs/grpo.yaml"]
    trainer = train.train(
        [
            *recipe, "--max_steps", str(args.steps), "--save_strategy", "no",
            "--report_to", "none", "--no-resume", "--output_dir", "outputs/gpu-check", *overrides,
        ]
    )  # fmt: skip
    free, card_total = torch.cuda.mem_get_info(0)
    figures = {
        "gpu": torch.cuda.get_device_name(0),
        "tier": project.GPU_TIER,
        "budget_gib": round(budget / GIB, 2),
        "estimated_peak_gib": project.ESTIMATED_PEAK_GIB,
        "torch_peak_allocated_gib": round(torch.cuda.max_memory_allocated(0) / GIB, 2),
        "torch_peak_reserved_gib": round(torch.cuda.max_memory_reserved(0) / GIB, 2),
        "card_used_gib": round((card_total - free) / GIB, 2),
        "steps": trainer.state.global_step,
        "trainer": type(trainer).__name__,
        "use_vllm": bool(trainer.args.use_vllm),
        "load_in_4bit": bool(getattr(trainer.model, "is_loaded_in_4bit", False)),
        "model": trainer.model.config._name_or_path,
    }
    figures["reserved_over_estimate"] = round(
        figures["torch_peak_reserved_gib"] / project.ESTIMATED_PEAK_GIB, 2
    )
    print(json.dumps(figures, indent=2))
    if args.report:
        args.report.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    return run(gpu_check, argv)


if __name__ == "__main__":
    sys.exit(main())
