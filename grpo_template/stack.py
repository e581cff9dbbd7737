"""Dependency pins per backend: the version ranges the template's tests have proved together.

`tests/test_stack.py` checks that the installed libraries of the test environment fall inside
these ranges, so a pin is only widened after the suite passed on the new versions.
"""

from __future__ import annotations

import re

# The Transformers backend: TRL 1.16 on transformers 5.24 (see shared/reference/trl-grpo-1.16.md).
TRANSFORMERS_STACK = (
    "torch>=2.13,<2.14",
    "trl>=1.16,<1.17",
    "transformers>=5.24,<5.25",
    "peft>=0.21,<0.22",
    "datasets>=5.2,<5.3",
    "accelerate>=1.15,<1.16",
)

# The Unsloth backend: unsloth 2026.10.9 caps trl at 1.15.0, transformers at 5.17.0 and
# datasets below 5 (shared/reference/unsloth-2026.10.md), so it has its own proved set.
UNSLOTH_STACK = (
    "torch>=2.13,<2.14",
    "unsloth==2026.10.9",
    "unsloth_zoo==2026.10.9",
    "trl==1.15.0",
    "transformers==5.17.0",
    "peft>=0.21,<0.22",
    "datasets>=4.8,<5",
    "accelerate>=1.15,<1.16",
)

TRACKER_PACKAGES = {
    "none": (),
    "tensorboard": ("tensorboard>=2.18",),
    "trackio": ("trackio>=0.43,<0.44",),
    "wandb": ("wandb>=0.31,<0.32",),
}

DEV = ("pytest>=8", "hypothesis>=6.100", "ruff>=0.15")

# GPU-only extras (`pip install -e ".[gpu]"`): what the tuned recipe uses on the GPU.
# vLLM 0.30.0 is the newest release inside TRL 1.16's range (0.22-0.31) whose requirements admit
# transformers 5.24 and torch 2.13 (0.31 caps transformers below 5.18); a pip resolution
# (`tests/test_stack.py`, slow) proves the set installs together.
VLLM = "vllm==0.30.0"
BITSANDBYTES = "bitsandbytes>=0.45,<0.51"
DEEPSPEED = "deepspeed>=0.18.6,<0.20"

# torch is installed first, by itself: PyPI's Linux torch is the CUDA build (~2.7 GB with its
# NVIDIA wheels: right on a GPU machine), PyTorch's CPU index serves the CPU build (~200 MB).
CPU_TORCH = "torch==2.13.0"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def dependencies(backend: str, tracker: str, extra: tuple[str, ...] = ()) -> list[str]:
    """The project's requirements besides grpo-kit (whose own requirements, math-verify,
    jsonschema, rich, ..., come with it): the backend's stack, the tracker, task extras."""
    stack = {"transformers": TRANSFORMERS_STACK, "unsloth": UNSLOTH_STACK}[backend]
    return [*stack, *TRACKER_PACKAGES[tracker], *extra]


def summary(backend: str) -> str:
    """The backend's key pins in words, e.g. `trl==1.16.0, transformers==5.24.0`."""
    stack = {"transformers": TRANSFORMERS_STACK, "unsloth": UNSLOTH_STACK}[backend]
    keys = ("unsloth", "trl", "transformers", "peft", "datasets")
    return ", ".join(f"`{r}`" for r in stack if re.match(r"[\w.-]+", r).group() in keys)


def gpu_dependencies(plan) -> list[str]:
    """GPU-only packages the plan needs: vLLM, bitsandbytes (4-bit / 8-bit Adam), DeepSpeed."""
    needs = []
    if plan.use_vllm or plan.fast_inference:
        needs.append(VLLM)
    if plan.mode == "qlora" or "8bit" in plan.optim:
        needs.append(BITSANDBYTES)
    if plan.distributed.startswith("zero"):
        needs.append(DEEPSPEED)
    return needs
