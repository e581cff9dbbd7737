"""The records a project keeps of how it was generated, so that it can be regenerated.

`.cookiecutter.json`: the answers, in cookiecutter's replay format. `cookiecutter <template>
--replay-file .cookiecutter.json` regenerates the same project; edit a value first (e.g.
`"task_type"`) to regenerate it for another choice. Machine-specific keys (where the template and
output folder were on this machine) and cruft's `_commit` (recorded in `.cruft.json`; here it
would make every template update touch this file) are left out.

`.cruft.json`: what `cruft update` reads (the template's repository, the commit generated from,
the answers), written by the post-generation hook when plain `cookiecutter` generated the project
from a git repository, in the form `cruft create` writes (cruft 2.16's `create`: template,
commit, checkout, context, directory), so that the README's `cookiecutter` command gives a
project cruft can update. Under cruft itself the hook writes nothing: cruft writes the file.
"""

from __future__ import annotations

MACHINE_KEYS = {"_output_dir", "_repo_dir", "_checkout", "_commit"}
# A rendered check (questions.py), kept in the record with its rendered value: a replay prompts
# (renders) every key the record lacks, without the template's Jinja extension.
CHECKED_KEY = "__answers_checked"


def _answers(context: dict) -> dict:
    return {
        key: value
        for key, value in context.items()
        if key not in MACHINE_KEYS and key != "__prompts__"
    }


def replay_record(context: dict) -> dict:
    return {"cookiecutter": _answers(context)}


def made_by_cruft(context: dict) -> bool:
    """Whether cruft is generating (`cruft create`, or each side of `cruft update`): cruft adds
    `_commit` to the context, plain cookiecutter does not."""
    return "_commit" in context


def cruft_record(context: dict, template: str, commit: str, directory: str | None = None) -> dict:
    """`.cruft.json` for a project generated from `template` (a URL or a local repository's path)
    at `commit`: the keys and context `cruft create` writes for the same generation."""
    answers = {**_answers(context), "_template": template, "_commit": commit}
    return {
        "template": template,
        "commit": commit,
        "checkout": context.get("_checkout"),
        "context": {"cookiecutter": answers},
        "directory": directory,
    }
