"""The option matrix: every combination of interacting answers, and which of them are valid.

Interacting options (model, tier, task, backend) are combined exhaustively; options that do not
interact with the others (tracker) are cycled through the combinations (cookiecutter-data-science
style). `is_valid` is the same check the pre-generation hook runs.
"""

from __future__ import annotations

import itertools

from grpo_template import answers, catalog, tasks, tiers

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


# What cookiecutter's defaults give the multi-GPU tiers (num_gpus/num_nodes are asked for them).
SCALE = {"multi-gpu": {"num_gpus": "8"}, "multi-node": {"num_gpus": "8", "num_nodes": "2"}}


def combinations() -> list[dict]:
    trackers = itertools.cycle(answers.TRACKERS)
    combos = []
    models = [{"model": m} for m in catalog.CATALOG] + [CUSTOM]
    for model, tier, task, backend in itertools.product(
        models, tiers.TIERS, tasks.TASKS, answers.BACKENDS
    ):
        combos.append(
            {
                **BASE,
                **model,
                "gpu_tier": tier,
                "task_type": task,
                "backend": backend,
                "tracker": next(trackers),
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
        ]
    )


def refusal(combo: dict) -> str:
    """The words the pre-generation hook's error must contain for an invalid combination."""
    if combo["backend"] == "unsloth" and combo["gpu_tier"] in ("multi-gpu", "multi-node"):
        return "backend=unsloth is not offered"
    return "does not fit"


VALID = [c for c in combinations() if is_valid(c)]
INVALID = [c for c in combinations() if not is_valid(c)]
