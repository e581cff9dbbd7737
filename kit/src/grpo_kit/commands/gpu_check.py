"""`grpo gpu-check` (`make gpu-check`): prove the plan on a real GPU, a few steps of this
project's own recipe measured against the template's memory estimate.

    grpo gpu-check [--steps 3] [--report F.json]

The process is capped to the tier's memory, so a bigger card behaves like the tier's, and vLLM's
share (a fraction of the whole card to vLLM) is scaled to the cap. It trains the recipe's real
model when the Hub (or a local copy) can provide it; otherwise the tiny offline model, and it
says so: the tiny model proves the GPU code path, not the estimate. With the real model the
card's peak use is compared with the estimate: within TOLERANCE it passes, otherwise (or when
nothing was measured) it fails with a non-zero exit code. Other arguments are recipe overrides; an
override that changes what is trained (model, batch, lengths, quantization, ...) makes the
estimate inapplicable, and the report says so instead of giving a verdict.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path

from ..errors import UserError
from ..runner import run

GIB = 1024**3
TOLERANCE = 0.25  # measured peak within +-25 % of the estimate
OUTPUT_DIR = "outputs/gpu-check"
# Overrides that leave the measured configuration the estimated one.
NEUTRAL = {"max_steps", "save_strategy", "report_to", "output_dir", "logging_steps", "resume"}


class NotMeasured(UserError):
    """The check could not measure what it was asked to."""


def scaled_share(share: float, cap_gib: float, card_gib: float) -> float:
    """vLLM's `gpu_memory_utilization` is a fraction of the whole card: the tier's share of a
    tier-sized card, rescaled so that it is the same amount on this (bigger) card."""
    if card_gib <= 0:
        raise ValueError("card memory must be positive")
    return round(share * min(cap_gib, card_gib) / card_gib, 4)


def verdict(measured_gib: float, estimate_gib: float, tolerance: float = TOLERANCE) -> str:
    """`pass` when the measurement is within `tolerance` of the estimate, else `fail`."""
    if measured_gib <= 0 or estimate_gib <= 0:
        raise NotMeasured("no memory was measured (peak 0): the check proves nothing")
    return "pass" if abs(measured_gib / estimate_gib - 1) <= tolerance else "fail"


def changed_fields(overrides: Sequence[str]) -> list[str]:
    """The recipe fields the command line changes that the estimate depends on."""
    names = [a.lstrip("-").split("=", 1)[0] for a in overrides if a.startswith("--")]
    return [n for n in names if n and n not in NEUTRAL and n != "config"]


def model_available(name: str) -> bool:
    """A local folder, or a Hub id whose files can be fetched (offline mode: no)."""
    if Path(name).is_dir():
        return True
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return False
    try:
        from huggingface_hub import model_info

        model_info(name, timeout=10)
    except Exception:  # noqa: BLE001 - any failure means: not reachable from here
        return False
    return True


def vllm_share_override(recipe, cap_gib: float, card_gib: float) -> list[str]:
    """The backend's vLLM share field, scaled to the cap (nothing when vLLM is off)."""
    training, backend = recipe.training, recipe.backend
    if getattr(backend, "fast_inference", False):  # Unsloth
        # Unsloth's standby mode replaces the share with its own unless told to keep ours.
        os.environ["UNSLOTH_VLLM_STANDBY_UTIL_OVERRIDE"] = "1"
        share = scaled_share(backend.gpu_memory_utilization, cap_gib, card_gib)
        return ["--gpu_memory_utilization", str(share)]
    if training.use_vllm and training.vllm_mode == "colocate":
        share = scaled_share(training.vllm_gpu_memory_utilization, cap_gib, card_gib)
        return ["--vllm_gpu_memory_utilization", str(share)]
    return []


def parse_args(argv: Sequence[str] | None):
    parser = argparse.ArgumentParser(
        prog="grpo gpu-check",
        description="Train a few steps of the recipe under the tier's memory cap and compare "
        "the card's peak with the template's estimate.",
        epilog="Other options are recipe overrides (they may make the estimate inapplicable).",
    )
    parser.add_argument("--steps", type=int, default=3, help="optimizer steps (default 3)")
    parser.add_argument("--report", type=Path, help="also write the figures as JSON here")
    return parser.parse_known_args(argv)


def gpu_check(argv: Sequence[str] | None = None) -> dict:
    import torch

    from .. import training
    from ..offline.tiny_model import project_tiny_model
    from ..project import load as load_project
    from ..recipe import TINY_MODEL_DIR, parse_recipe

    args, overrides = parse_args(argv)
    project = load_project()
    tier = project.tier
    if not torch.cuda.is_available():
        raise UserError("gpu-check needs a CUDA GPU; on this machine use `make smoke` instead")
    card = torch.cuda.get_device_properties(0).total_memory
    cap = min(card, tier.memory_gib * GIB)
    recipe = parse_recipe(overrides, project=project)
    extra = vllm_share_override(recipe, cap / GIB, card / GIB)
    model = recipe.model.model_name_or_path
    real_model = model_available(model)
    if not real_model:
        print(
            f"gpu-check: {model} cannot be fetched here (offline?): training the tiny model "
            "instead, which proves the GPU code path but not the memory estimate",
            flush=True,
        )
        if not (TINY_MODEL_DIR / "config.json").is_file():
            project_tiny_model(TINY_MODEL_DIR, project)
        extra += ["--model_name_or_path", str(TINY_MODEL_DIR)]
    torch.cuda.set_per_process_memory_fraction(cap / card, 0)
    torch.cuda.reset_peak_memory_stats()
    trainer = training.run(
        None,
        [
            *overrides, "--max_steps", str(args.steps), "--save_strategy", "no",
            "--report_to", "none", "--no-resume", "--output_dir", OUTPUT_DIR, *extra,
        ],
        project=project,
    )  # fmt: skip
    free, total = torch.cuda.mem_get_info(0)
    figures = {
        "gpu": torch.cuda.get_device_name(0),
        "tier": tier.name,
        "cap_gib": round(cap / GIB, 2),
        "model": trainer.model.config._name_or_path,
        "estimated_peak_gib": tier.estimated_peak_gib,
        "torch_peak_allocated_gib": round(torch.cuda.max_memory_allocated(0) / GIB, 2),
        "torch_peak_reserved_gib": round(torch.cuda.max_memory_reserved(0) / GIB, 2),
        "card_used_gib": round((total - free) / GIB, 2),
        "steps": trainer.state.global_step,
        "trainer": type(trainer).__name__,
        "use_vllm": bool(trainer.args.use_vllm),
        "load_in_4bit": bool(getattr(trainer.model, "is_loaded_in_4bit", False)),
    }
    if figures["steps"] < args.steps:
        raise NotMeasured(f"trained {figures['steps']} of {args.steps} steps: nothing to compare")
    measured = max(figures["card_used_gib"], figures["torch_peak_reserved_gib"])
    changed = changed_fields(overrides)
    if not real_model:
        figures["verdict"] = "not compared: the tiny model ran, not the recipe's"
    elif changed:
        figures["verdict"] = f"not compared: the overrides change {', '.join(changed)}"
    else:
        figures["measured_over_estimate"] = round(measured / tier.estimated_peak_gib, 2)
        figures["verdict"] = verdict(measured, tier.estimated_peak_gib)
    print(json.dumps(figures, indent=2))
    if args.report:
        args.report.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    print(f"gpu-check: measured {measured:.1f} GiB, estimated {tier.estimated_peak_gib} GiB: "
          f"{figures['verdict']}")  # fmt: skip
    if figures["verdict"] == "fail":
        raise NotMeasured(
            f"the card's peak ({measured:.1f} GiB) is more than {TOLERANCE:.0%} away from the "
            f"estimate ({tier.estimated_peak_gib} GiB): the tier's plan may not fit; report it"
        )
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    return run(gpu_check, argv)
