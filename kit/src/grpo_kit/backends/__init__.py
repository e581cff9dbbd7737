"""The two backends a project can train with, chosen by `[tool.grpo] backend`:

- `transformers`: Transformers + TRL + PEFT, every tier (backends/transformers.py);
- `unsloth`: Unsloth's FastLanguageModel + TRL's GRPOTrainer, the cpu and single-GPU tiers
  (backends/unsloth.py).

Both modules offer the same functions (check_gpu_packages, trainer_model, check_trainer,
load_for_merge, save_merged, fast_generator). `load` imports one: Unsloth's must be imported
before trl, transformers and peft, so commands call `load` before anything that pulls those in
(`cli` does it first thing). The recipe fields of each backend are below, importable without
either library (the template reads their defaults).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType

__all__ = [
    "ARGUMENTS",
    "TransformersArguments",
    "UnslothArguments",
    "arguments",
    "load",
]


@dataclass
class TransformersArguments:
    """The Transformers backend needs no recipe fields beyond TRL's ModelConfig and GRPOConfig."""


@dataclass
class UnslothArguments:
    """Recipe fields of the Unsloth backend (passed to FastLanguageModel)."""

    max_seq_length: int = field(
        default=2048, metadata={"help": "Longest prompt + completion the model is set up for."}
    )
    fast_inference: bool = field(
        default=False, metadata={"help": "Generate with vLLM sharing the model's weights (GPU)."}
    )
    gpu_memory_utilization: float = field(
        default=0.5, metadata={"help": "Share of the GPU vLLM may use (fast_inference)."}
    )
    max_lora_rank: int = field(
        default=64, metadata={"help": "Largest LoRA rank vLLM accepts; must be >= lora_r."}
    )


ARGUMENTS = {"transformers": TransformersArguments, "unsloth": UnslothArguments}


def arguments(name: str) -> type:
    """The backend's recipe-field dataclass."""
    return ARGUMENTS[name]


def load(name: str) -> ModuleType:
    """The backend's module (for Unsloth: imports unsloth, which must come before trl)."""
    if name not in ARGUMENTS:
        raise ValueError(f"unknown backend {name!r}")
    return importlib.import_module(f"{__name__}.{name}")
