"""`.cookiecutter.json`: the answers a project was baked with, in cookiecutter's replay format.

`cookiecutter <template> --replay-file .cookiecutter.json` regenerates the same project; edit a
value first (e.g. `"task_type"`) to regenerate it for another choice. Machine-specific keys (where
the template and output folder were on this machine) are left out.
"""

from __future__ import annotations

MACHINE_KEYS = {"_output_dir", "_repo_dir", "_checkout"}
CHECKED_KEY = "__answers_checked"  # a rendered check (questions.py), not an answer


def replay_record(context: dict) -> dict:
    answers = {
        key: value
        for key, value in context.items()
        if key not in MACHINE_KEYS and key not in ("__prompts__", CHECKED_KEY)
    }
    return {"cookiecutter": answers}
