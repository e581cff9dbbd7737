"""`grpo gpu-check` (`make gpu-check`): prove the plan on a real GPU, a few steps of this
project's own recipe measured against the template's memory estimate.

    grpo gpu-check [--steps 3] [--report F.json] [--local-model DIR]

The process is capped to the tier's memory, so a bigger card behaves like the tier's, and vLLM's
share (a fraction of the whole card to vLLM) is scaled to the cap. It needs no network and
installs nothing: the recipe's model comes from a folder (the recipe's, or `--local-model`: a
copy of the recipe's model, e.g. the acceptance run's random weights of its exact shape), the
Hugging Face cache (complete: config and every weight file), else the Hub when it answers; the
data is the recipe's own when local, else the task's shipped sample while the recipe names the
task's default data (the estimate assumes prompts of max_prompt_tokens either way). Without the
model it trains the tiny offline model, and says so: that proves the GPU code path, not the
estimate. Everything up to training runs on any machine; without a CUDA GPU it stops there, in
one line. With the real model the card's peak use is compared with the estimate: within
TOLERANCE it passes, otherwise (or when nothing was measured) it fails with a non-zero exit code.
Other arguments are recipe overrides; an override that changes what is trained (model, batch,
lengths, quantization, ...) makes the estimate inapplicable, and the report says so instead of
giving a verdict.
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


WEIGHTS = ("model.safetensors", "pytorch_model.bin")  # one file, or an index of shards


def cached_model(name: str) -> Path | None:
    """The Hugging Face cache's snapshot of the model `name` when its config and every weight
    file are there (huggingface_hub.try_to_load_from_cache), else None."""
    import json

    from huggingface_hub import try_to_load_from_cache

    def cached(filename: str) -> Path | None:
        try:
            found = try_to_load_from_cache(name, filename)
        except Exception:  # noqa: BLE001 - not a valid repo id (a path): not cached
            return None
        return Path(found) if isinstance(found, str) else None

    config = cached("config.json")
    if config is None:
        return None
    for weights in WEIGHTS:
        if cached(weights):
            return config.parent
        index = cached(f"{weights}.index.json")
        if index is not None:
            try:
                shards = set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values())
            except (OSError, ValueError, KeyError, AttributeError):
                return None
            return config.parent if all(cached(shard) for shard in shards) else None
    return None


def model_source(name: str, local: Path | None = None) -> tuple[str, str] | None:
    """(what to load, where it comes from) for the recipe's model without installing or
    downloading anything first: `local` (a copy of it), a folder, the cache, else the Hub when it
    answers (never in offline mode); None when none has it."""
    if local is not None:
        if not (local / "config.json").is_file():
            raise UserError(f"--local-model {local}: no config.json there (a model folder?)")
        return str(local), f"the local copy {local}"
    if Path(name).is_dir():
        return name, f"the folder {name}"
    snapshot = cached_model(name)
    if snapshot is not None:
        return str(snapshot), f"the Hugging Face cache ({name})"
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return None
    try:
        from huggingface_hub import model_info

        model_info(name, timeout=10)
    except Exception:  # noqa: BLE001 - any failure means: not reachable from here
        return None
    return name, f"the Hub ({name})"


def model_available(name: str) -> bool:
    """A local folder, a complete copy in the cache, or a Hub id that answers (offline: no)."""
    return model_source(name) is not None


def data_layer(recipe):
    """The task's shipped sample as a recipe layer while the recipe names the task's default
    data (on the Hub), so the check needs no network; None for data of your own."""
    from ..recipe import Layer, names_default_data, sample_data_values

    project = recipe.project
    named = {"dataset_name": recipe.script.dataset_name}
    named["dataset_config"] = recipe.script.dataset_config
    if not names_default_data(project, named):
        return None
    return Layer(f"the sample data ({project.task.data.sample})", sample_data_values(project))


def measured_gib(figures: dict) -> float:
    """The card's peak as gpu-check counts it: what the card had in use at the end, or torch's
    peak reservation, whichever is larger (vLLM's share is outside torch's allocator)."""
    return max(figures["card_used_gib"], figures["torch_peak_reserved_gib"])


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
    parser.add_argument(
        "--local-model",
        type=Path,
        help="a folder holding the recipe's model (the same shapes): trained instead, and the "
        "verdict still applies",
    )
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
    cuda = torch.cuda.is_available()
    recipe = parse_recipe(overrides, project=project, read_only=True)
    data = data_layer(recipe)
    model = recipe.model.model_name_or_path
    source = model_source(model, args.local_model)
    what = (
        f"the model from {source[1]}"
        if source
        else f"the tiny offline model ({model} is in no folder or cache here, and the Hub does "
        "not answer)"
    )
    what += f", {data.source if data else 'the recipe data ' + recipe.script.dataset_name}"
    if not cuda:
        raise UserError(
            f"gpu-check: ready to train {what} under the {tier.name} tier's cap; the rest needs "
            "a CUDA GPU (on this machine, `make smoke` runs the CPU path)"
        )
    card = torch.cuda.get_device_properties(0).total_memory
    cap = min(card, tier.memory_gib * GIB)
    recipe = parse_recipe(overrides, extra=data, project=project)
    extra = vllm_share_override(recipe, cap / GIB, card / GIB)
    print(f"gpu-check: training {what}", flush=True)
    if source is None:
        print(
            "gpu-check: the tiny model proves the GPU code path but not the memory estimate",
            flush=True,
        )
        if not (TINY_MODEL_DIR / "config.json").is_file():
            project_tiny_model(TINY_MODEL_DIR, project)
        extra += ["--model_name_or_path", str(TINY_MODEL_DIR)]
    elif source[0] != model:
        extra += ["--model_name_or_path", source[0]]
    real_model = source is not None
    torch.cuda.set_per_process_memory_fraction(cap / card, 0)
    torch.cuda.reset_peak_memory_stats()
    trainer = training.run(
        None,
        [
            *overrides, "--max_steps", str(args.steps), "--save_strategy", "no",
            "--report_to", "none", "--no-resume", "--output_dir", OUTPUT_DIR,
            "--preflight", "false",  # measures training's memory (a random model has no signal)
            *extra,
        ],
        stage=data,
        project=project,
    )  # fmt: skip
    free, total = torch.cuda.mem_get_info(0)
    figures = {
        "gpu": torch.cuda.get_device_name(0),
        "tier": tier.name,
        "cap_gib": round(cap / GIB, 2),
        "model": trainer.model.config._name_or_path,
        "model_source": source[1] if source else "the tiny offline model",
        "data": data.source if data else recipe.script.dataset_name,
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
    measured = measured_gib(figures)
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
