"""What the post-generation hook does once a project's files are in place: start it as a git
repository with a first commit (so that `cruft update` merges three ways, and `make update` can
refuse a project with uncommitted changes), and say what next, once.

`cruft update` (and `cruft diff`, `cruft check`) renders the template twice into temporary
folders to compute its diff: there the hook neither starts a repository (a `.git` in a render
would enter the diff) nor prints (the user would read "Created /tmp/tmpXXXX/..." twice). Such a
render is recognised from the call stack of the process that renders the hook's source (cruft's
own functions, `cruft._commands.utils.generate`), read by the template's Jinja extension.

The repository is not started where the user opted out (GRPO_NO_GIT=1 in the environment), where
the project is created inside a git work tree already (a monorepo: the user commits it there;
a folder that repository ignores, such as a template checkout's build/, gets its own), or where
git is missing (the hook says so and the generation goes on).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

OPT_OUT = "GRPO_NO_GIT"
# cruft's modules that render the template into temporary folders for a diff.
_CRUFT_RENDERS = (
    "cruft._commands.utils.generate",
    "cruft._commands.update",
    "cruft._commands.diff",
    "cruft._commands.check",
)
FIRST_COMMIT = "Generated from grpo-template"
# The identity of the first commit where the user has none configured (git refuses to commit).
IDENTITY = ("user.name=grpo-template", "user.email=grpo-template@localhost")


def rendering_for_cruft_diff() -> bool:
    """Whether this process is rendering the template for cruft's diff (a temporary folder that
    cruft deletes), not a project the user keeps: one of cruft's diff-rendering modules is on
    the call stack."""
    frame = sys._getframe()
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module in _CRUFT_RENDERS:
            return True
        frame = frame.f_back
    return False


def opted_out(environ=None) -> bool:
    value = (os.environ if environ is None else environ).get(OPT_OUT, "")
    return value.strip().lower() not in ("", "0", "false", "no")


def _git(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=project, capture_output=True, text=True)


def inside_work_tree(project: Path) -> bool:
    """Whether `project` (not yet a repository itself) lies in another git work tree, in a
    folder that repository tracks (an ignored one, such as a checkout's build/, is not)."""
    found = _git(project, "rev-parse", "--is-inside-work-tree")
    if found.returncode != 0 or found.stdout.strip() != "true":
        return False
    return _git(project, "check-ignore", "-q", ".").returncode != 0


def start_repository(project: Path, environ=None) -> str:
    """Make `project` a git repository with a first commit of every generated file; returns
    the line to print (what was done, or why not and how to do it)."""
    how = "git init && git add -A && git commit -m 'Generated'"
    if opted_out(environ):
        return f"git: not started ({OPT_OUT} is set); before `make update`: {how}"
    if shutil.which("git") is None:
        return f"git: not found, the project is not a repository; before `make update`: {how}"
    if inside_work_tree(project):
        return "git: inside an existing repository; commit the project there before `make update`"
    identity: list[str] = []
    for setting in IDENTITY:
        key = setting.split("=")[0]
        if not _git(project, "config", key).stdout.strip():
            identity += ["-c", setting]
    steps = (
        ("init", "-q"),
        ("add", "-A"),
        (*identity, "commit", "-q", "--no-verify", "-m", FIRST_COMMIT),
    )
    for step in steps:
        done = _git(project, *step)
        if done.returncode != 0:
            reason = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["failed"]
            return f"git: could not commit the project ({reason[0]}); before `make update`: {how}"
    return "git: a new repository, first commit made (`make update` needs it)"


def in_cruft_order(record: dict, template_root: Path) -> dict:
    """`.cruft.json`'s answers in the order cruft writes them (cookiecutter.json's, then what
    cruft adds), so that the record the hook commits is the file `cruft create` writes after
    it, byte for byte, and the new repository stays clean."""
    import json

    answers = record["context"]["cookiecutter"]
    order = json.loads((template_root / "cookiecutter.json").read_text(encoding="utf-8"))
    known = [key for key in order if key in answers]
    ordered = {key: answers[key] for key in known}
    ordered.update({key: value for key, value in answers.items() if key not in ordered})
    return {**record, "context": {**record["context"], "cookiecutter": ordered}}
