"""`cookiecutter.json`, generated from the catalog, tiers and tasks so the choices cannot drift.

    python -m grpo_template.questions --write   # regenerate cookiecutter.json

`tests/test_questions.py` fails when the committed file differs from what this produces.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from . import algorithms, answers, catalog, replay, tasks, tiers

ROOT = Path(__file__).resolve().parent.parent


def _model_label(spec: catalog.ModelSpec) -> str:
    active = f", {spec.active_params / 1e9:.1f}B active" if spec.is_moe else ""
    vision = ", vision-language" if spec.tower_params else ""
    gated = ", gated" if spec.gated else ""
    thinking = ", thinking" if spec.thinking else ""
    return f"{spec.hub_id} ({spec.params_b:.1f}B{active}{vision}{thinking}{gated})"


def _first(default: str, names) -> list[str]:
    names = list(names)
    return [default, *[n for n in names if n != default]]


def checked_key(question: str) -> str:
    """The never-asked key cookiecutter renders right after `question`: its check."""
    return f"__{question}_checked"


def _with_checks(asked: dict) -> dict:
    """The questions in order, each followed by its check (answers.CHECKS_AFTER): Cookiecutter
    renders a private key as soon as the question before it is answered, so a bad answer is
    refused in one line before the next question. The check reads as nothing when the template's
    extension is absent (a replay of a record made before the key existed: the pre-generation
    hook still checks every answer)."""
    ordered = {}
    for question, default in asked.items():
        ordered[question] = default
        if question in answers.CHECKS_AFTER:
            call = f"grpo_check({question!r}, cookiecutter)"
            ordered[checked_key(question)] = f"{{{{ {call} if grpo_check is defined else '' }}}}"
    return ordered


def questions() -> dict:
    models = _first(catalog.DEFAULT_MODEL, catalog.CATALOG) + [catalog.CUSTOM]
    custom = f"cookiecutter.model == '{catalog.CUSTOM}'"
    # The multi-GPU tiers' default machine size is the tier's own (tiers.TIERS).
    gpus = tiers.TIERS["multi-gpu"].gpus_per_node
    nodes = tiers.TIERS["multi-node"].nodes
    scalable = tuple(name for name, tier in tiers.TIERS.items() if tier.scalable)
    asked = {
        "project_name": "My GRPO Project",
        "project_slug": "{{ cookiecutter.project_name | slugify }}",
        "package_name": "{{ cookiecutter.project_slug | replace('-', '_') }}",
        "model": models,
        "custom_model_id": "{{ '"
        + answers.CUSTOM_ID_PLACEHOLDER
        + "' if "
        + custom
        + " else 'n/a' }}",
        "custom_model_params_b": "{{ '7' if " + custom + " else '0' }}",
        "task_type": _first(tasks.DEFAULT_TASK, tasks.TASKS),
        "gpu_tier": _first(tiers.DEFAULT_TIER, tiers.TIERS),
        "num_gpus": f"{{{{ '{gpus}' if cookiecutter.gpu_tier in {scalable!r} else '1' }}}}",
        "num_nodes": f"{{{{ '{nodes}' if cookiecutter.gpu_tier == 'multi-node' else '1' }}}}",
        "backend": list(answers.BACKENDS),
        "algorithm": _first(algorithms.DEFAULT, algorithms.ALGORITHMS),
        "tracker": list(answers.TRACKERS),
    }
    return {
        **_with_checks(asked),
        # Rendered (never asked) after the last answer: refuses a bad combination in one line,
        # without the traceback a failing pre-generation hook gets from cookiecutter.
        replay.CHECKED_KEY: "{{ grpo_validate(cookiecutter) }}",
        "_extensions": ["grpo_template.jinja.GrpoExtension"],
        "_copy_without_render": ["*.jinja"],
        "__prompts__": {
            "project_name": "Project name",
            "project_slug": "Project folder and distribution name",
            "package_name": "Python package name",
            "model": {
                "__prompt__": "Base model to fine-tune",
                **{m: _model_label(catalog.CATALOG[m]) for m in models if m in catalog.CATALOG},
                catalog.CUSTOM: "custom: any Hub id (asked next)",
            },
            "custom_model_id": "Custom model Hub id (only used when model is 'custom')",
            "custom_model_params_b": "Custom model size in billions of parameters ('custom' only)",
            "task_type": {
                "__prompt__": "Task type",
                **{t.name: t.label for t in tasks.TASKS.values()},
            },
            "gpu_tier": {
                "__prompt__": "GPU tier (memory per GPU)",
                **{t.name: t.label for t in tiers.TIERS.values()},
            },
            "num_gpus": "GPUs per node (multi-gpu and multi-node tiers only)",
            "num_nodes": "Number of nodes (multi-node tier only)",
            "backend": {
                "__prompt__": "Training backend",
                "transformers": "Transformers + TRL + PEFT (every tier)",
                "unsloth": "Unsloth (faster, less memory; cpu and single-GPU tiers)",
            },
            "algorithm": {
                "__prompt__": "GRPO algorithm (the same on both backends; README: which to pick)",
                **{a.name: a.label for a in algorithms.ALGORITHMS.values()},
            },
            "tracker": {
                "__prompt__": "Experiment tracker",
                "none": "none (console and files only)",
                "tensorboard": "TensorBoard (local event files)",
                "trackio": "Trackio (local database; a Hub Space if you set one)",
                "wandb": "Weights & Biases (offline unless WANDB_API_KEY is set)",
            },
        },
    }


def render() -> str:
    return json.dumps(questions(), indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write cookiecutter.json")
    args = parser.parse_args()
    if args.write:
        (ROOT / "cookiecutter.json").write_text(render(), encoding="utf-8")
    else:
        print(render(), end="")


if __name__ == "__main__":
    main()
