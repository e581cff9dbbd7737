"""The option matrix: every combination of interacting answers, and which of them are valid.

The options that decide the plan and the refusals (model, tier, backend) are combined
exhaustively; the others are cycled through the combinations (cookiecutter-data-science style):
the task (each task's fit for every model and tier is decided without baking in
tests/test_tuning.py, and every backend x task x tier shape is still baked), the tracker, and
the algorithm (the same set of recipe fields on every plan, checked per backend by
tests/test_algorithms.py). `is_valid` is the same check the pre-generation hook runs.
"""

from __future__ import annotations

import itertools

from grpo_template import algorithms, answers, catalog, tasks, tiers

BASE = {
    "project_name": "Matrix Project",
    "project_slug": "matrix-project",
    "package_name": "matrix_project",
    "custom_model_id": "n/a",
    "custom_model_params_b": "0",
}
CUSTOM = {
    "model": "custom",
    "custom_model_id": "mistralai/Mistral-7B-Instruct-v0.3",
    "custom_model_params_b": "7.2",
}


# What cookiecutter's defaults give the multi-GPU tiers (num_gpus/num_nodes are asked for them):
# the tiers' own sizes.
SCALE = {
    "multi-gpu": {"num_gpus": str(tiers.TIERS["multi-gpu"].gpus_per_node)},
    "multi-node": {
        "num_gpus": str(tiers.TIERS["multi-node"].gpus_per_node),
        "num_nodes": str(tiers.TIERS["multi-node"].nodes),
    },
}


# How far the task steps between the two backends of one model x tier (with the task stepping per
# model and tier, and the algorithm per model, every backend meets every task on every tier
# shape and every algorithm meets every backend and task: tests/test_algorithms.py, test_bake.py).
TASK_STEP = 1


def combinations() -> list[dict]:
    """Models x tiers x backends exhaustively (they decide the plan and the refusals); task,
    tracker and algorithm cycled through them, so every task meets every tier and backend
    across the models while the bake stays one per model x tier x backend (the task's own fit
    for every model and tier is checked without baking, in tests/test_tuning.py)."""
    trackers = itertools.cycle(answers.TRACKERS)
    methods = list(algorithms.ALGORITHMS)
    names = list(tasks.TASKS)
    combos = []
    models = [{"model": m} for m in catalog.CATALOG] + [CUSTOM]
    for (m, model), (t, tier), (b, backend) in itertools.product(
        enumerate(models), enumerate(tiers.TIERS), enumerate(answers.BACKENDS)
    ):
        # The task steps with the model and with the tier, and differs between the backends,
        # so every backend meets every task on every tier shape.
        task = names[(m + t + TASK_STEP * b) % len(names)]
        combos.append(
            {
                **BASE,
                **model,
                "gpu_tier": tier,
                "task_type": task,
                "backend": backend,
                "tracker": next(trackers),
                "algorithm": methods[m % len(methods)],
                **SCALE.get(tier, {}),
            }
        )
    return combos


def is_valid(combo: dict) -> bool:
    try:
        answers.validate(combo)
    except answers.AnswerError:
        return False
    return True


def name(combo: dict) -> str:
    return "-".join(
        [
            combo["model"].split("/")[-1],
            combo["gpu_tier"],
            combo["task_type"],
            combo["backend"],
            combo["tracker"],
            combo["algorithm"],
        ]
    )


def refusal(combo: dict) -> str:
    """The words the one-line refusal must contain for an invalid combination."""
    spec = catalog.CATALOG.get(combo["model"])
    tools = combo["task_type"] == "tools"
    no_tool_template = tools and (spec is None or not spec.tool_calling)
    if no_tool_template:  # checked right after the task question, before the tier is asked
        return "task_type=tools is not offered"
    # The early check runs right after the tier question: the multi-GPU tiers'
    # bakes give num_gpus (SCALE), so for them the full check (answers.validate) comes first.
    early = not tiers.TIERS[combo["gpu_tier"]].scalable
    try:
        if early:
            answers.validate_early(combo)
    except answers.AnswerError:
        return "does not fit"
    if combo["backend"] == "unsloth" and combo["gpu_tier"] in ("multi-gpu", "multi-node"):
        return "backend=unsloth is not offered"
    if combo["backend"] == "unsloth" and spec is not None and spec.unsloth:
        return "backend=unsloth is not offered"  # a model Unsloth cannot train this way
    if no_tool_template or (tools and combo["backend"] == "unsloth"):
        return "task_type=tools is not offered"
    return "does not fit"


VALID = [c for c in combinations() if is_valid(c)]
INVALID = [c for c in combinations() if not is_valid(c)]
