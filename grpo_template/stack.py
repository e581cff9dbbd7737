"""Dependency pins per backend: the version ranges the template's tests have proved together.

`tests/test_stack.py` checks that the installed libraries of the test environment fall inside
these ranges, so a pin is only widened after the suite passed on the new versions.
"""

from __future__ import annotations

# The Transformers backend: TRL 1.16 on transformers 5.24 (see shared/reference/trl-grpo-1.16.md).
TRANSFORMERS_STACK = (
    "torch>=2.13,<2.14",
    "trl>=1.16,<1.17",
    "transformers>=5.24,<5.25",
    "peft>=0.21,<0.22",
    "datasets>=5.2,<5.3",
    "accelerate>=1.15,<1.16",
)

COMMON = (
    "math-verify>=0.9,<0.10",
    "pyyaml>=6",
    "rich>=13",
)

TRACKER_PACKAGES = {"none": (), "tensorboard": ("tensorboard>=2.18",)}

DEV = ("pytest>=8", "hypothesis>=6.100", "ruff>=0.15")

# What a CPU-only machine installs first, so that pip does not fetch a multi-GB CUDA build.
CPU_TORCH = "torch==2.13.0"


def dependencies(backend: str, tracker: str, extra: tuple[str, ...] = ()) -> list[str]:
    """The project's requirements: backend stack, common tools, tracker, task extras."""
    stack = {"transformers": TRANSFORMERS_STACK}[backend]
    return [*stack, *COMMON, *TRACKER_PACKAGES[tracker], *extra]
