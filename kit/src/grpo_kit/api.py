"""The kit's declared API: the modules a project may import, and nothing else.

A generated project's files (its task, rewards and tests), the starters they are copied from
and the scripts `grpo eject` copies in import only these modules, and of each only the names in
its `__all__`; the kit's structure test enforces it (kit/tests/test_structure.py, and the
template's on every task's generated files). Everything else in grpo_kit is the kit's own and
may change in any release. `grpo docs api` (grpo_kit/docs/api.md) says what each module is for.

The kit calls a project only through its task (`<package>.task.TASK`, a `grpo_kit.task.Task`)
and, after `grpo eject`, the one function of each declared script (`grpo_kit.project`'s
`TrainScript`, `MergeScript`, `InferScript`).
"""

from __future__ import annotations

__all__ = ["PUBLIC_MODULES"]

PUBLIC_MODULES: tuple[str, ...] = (
    # a task and its rewards
    "grpo_kit.task",
    "grpo_kit.rewards",
    "grpo_kit.rewards.formats",
    "grpo_kit.rewards.judge",
    "grpo_kit.verify.math",
    "grpo_kit.verify.code",
    "grpo_kit.verify.json",
    "grpo_kit.verify.text",
    "grpo_kit.procedural",
    "grpo_kit.environments",
    "grpo_kit.sandbox",
    "grpo_kit.errors",
    # a project's tests
    "grpo_kit.testing",
    "grpo_kit.imports",
    # the flow the train, merge and infer scripts compose (grpo eject)
    "grpo_kit.project",
    "grpo_kit.training",
    "grpo_kit.merging",
    "grpo_kit.answering",
    "grpo_kit.generation",
    "grpo_kit.backends",
    "grpo_kit.backends.transformers",  # what backends.load returns: the same functions
    "grpo_kit.backends.unsloth",
    "grpo_kit.runner",
)
