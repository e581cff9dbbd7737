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
# 0.48.1: the floor of vllm-bnb-plugin below, so one range serves every plan.
BITSANDBYTES = "bitsandbytes>=0.48.1,<0.51"
DEEPSPEED = "deepspeed>=0.18.6,<0.20"
# vLLM >= 0.28 moved bitsandbytes out of tree: without this plugin a 4-bit model fails at start
# ("Unknown quantization method: bitsandbytes"). 0.0.3 registers itself through the
# `vllm.general_plugins` entry point, requires any vllm and bitsandbytes >= 0.48.1; a 0.0.x
# package, so pinned exactly. Needed only where 4-bit weights meet vLLM: Unsloth's
# fast_inference (it loads the pre-quantized checkpoint into vLLM and trains LoRA on the
# shared weights); the Transformers backend never plans 4-bit with vLLM (tuning.py).
VLLM_BNB_PLUGIN = "vllm-bnb-plugin==0.0.3"
# The fast kernels of hybrid models (`[kernels]` extra, catalog.ModelSpec.kernels), checked
# against torch 2.13 (whose Linux wheel brings triton 3.7.1 and CUDA 13 libraries):
# - flash-linear-attention 0.6.0: pure Python/Triton; fla-core 0.6.0 needs torch>=2.7, triton>=3.3,
#   and itself transformers>=5.6.2,<6;
# - causal-conv1d 1.7.0: a source distribution whose setup.py fetches a prebuilt wheel for the
#   installed torch and CUDA 13 (tag cu13torch2.13) or compiles with nvcc; it imports torch, so
#   it installs with --no-build-isolation;
# - mamba-ssm 2.3.2.post1: the same build scheme (CUDA 13 handled), needs triton>=3.5.
KERNEL_PINS = {
    "flash-linear-attention": "flash-linear-attention>=0.6,<0.7",
    "causal-conv1d": "causal-conv1d>=1.7,<1.8",
    "mamba-ssm": "mamba-ssm>=2.3.2,<2.4",
}
# The module each distribution installs (what `make doctor` imports to say which path is used).
KERNEL_MODULES = {
    "flash-linear-attention": "fla",
    "causal-conv1d": "causal_conv1d",
    "mamba-ssm": "mamba_ssm",
}

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


def vllm_loads_4bit(plan) -> bool:
    """Whether the plan's vLLM engine holds 4-bit bitsandbytes weights (Unsloth's
    fast_inference on a QLoRA plan): then vLLM needs the bitsandbytes plugin."""
    return plan.mode == "qlora" and (plan.use_vllm or plan.fast_inference)


def gpu_dependencies(plan) -> list[str]:
    """GPU-only packages the plan needs: vLLM (with the bitsandbytes plugin when it loads 4-bit
    weights), bitsandbytes (4-bit / 8-bit Adam), DeepSpeed."""
    needs = []
    if plan.use_vllm or plan.fast_inference:
        needs.append(VLLM)
    if vllm_loads_4bit(plan):
        needs.append(VLLM_BNB_PLUGIN)
    if plan.mode == "qlora" or "8bit" in plan.optim:
        needs.append(BITSANDBYTES)
    if plan.distributed.startswith("zero"):
        needs.append(DEEPSPEED)
    return needs


def kernel_dependencies(model) -> list[str]:
    """The `[kernels]` extra of a project on this model: its hybrid layers' fast kernels (empty
    for a model without such layers). Installed with `pip install --no-build-isolation -e
    '.[kernels]'` after torch (causal-conv1d and mamba-ssm build against it)."""
    return [KERNEL_PINS[name] for name in model.kernels]
