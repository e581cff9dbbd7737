"""`.cookiecutter.json`: the answers a project was baked with, in cookiecutter's replay format.

`cookiecutter <template> --replay-file .cookiecutter.json` regenerates the same project; edit a
value first (e.g. `"task_type"`) to regenerate it for another choice. Machine-specific keys (where
the template and output folder were on this machine) and cruft's `_commit` (recorded in
`.cruft.json`; here it would make every template update touch this file) are left out.
"""

from __future__ import annotations

MACHINE_KEYS = {"_output_dir", "_repo_dir", "_checkout", "_commit"}
# A rendered check (questions.py), kept in the record with its rendered value: a replay prompts
# (renders) every key the record lacks, without the template's Jinja extension.
CHECKED_KEY = "__answers_checked"


def replay_record(context: dict) -> dict:
    answers = {
        key: value
        for key, value in context.items()
        if key not in MACHINE_KEYS and key != "__prompts__"
    }
    return {"cookiecutter": answers}
