"""Before `cruft update` (`make update` runs this first): the project's files as the template
generated them, written into the project's git objects, so that cruft's update merges three ways.

`cruft update` renders the template twice (at `.cruft.json`'s commit, with the recorded answers,
and at the newer commit) and applies the difference with `git apply -3`. A three-way merge needs
the first render's version of each file (the "base") among the repository's objects. A project
that became a git repository only after the user had edited it (`git init` after generation,
which is what a project made with the opt-out does) lacks the base of every edited file: git
cannot merge, and cruft falls back to `git apply --reject`, which applies every other file and
leaves the edited one as it was with a `.rej` beside it (a task.py of one task beside a
rewards.py of another). With the base written first, the same update leaves conflict markers in
the edited file for the user to resolve, as it does in a project generated as a repository.

The render is cruft's own (`cruft._commands.utils`: the same function `cruft update` diffs), so
the recorded objects are byte for byte the bases cruft's patch names. Nothing in the working
tree or the index changes: `git hash-object -w` only adds objects.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from .errors import UserError

CRUFT_FILE = ".cruft.json"

__all__ = ["record_generated"]


def _git(project: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=project, input=stdin, capture_output=True, text=True)


def _state(project: Path) -> dict:
    path = project / CRUFT_FILE
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        state["template"], state["commit"], state["context"]["cookiecutter"]
    except FileNotFoundError:
        raise UserError(
            f"{path}: missing, so cruft cannot update this project (it records the template "
            "and the commit the project was generated from); generate the project with "
            "grpo-template's README command, or `cruft link <template>` it"
        ) from None
    except (ValueError, KeyError, TypeError) as err:
        raise UserError(
            f"{path}: not a cruft record ({err}); restore it from git (`git checkout -- "
            f"{CRUFT_FILE}`)"
        ) from None
    return state


def _cruft():
    try:
        from cruft._commands import utils as cruft_utils
    except ImportError:
        raise UserError(
            'cruft is not installed: pip install "cruft>=2.16,<3" "typer>=0.24,<0.26"'
        ) from None
    return cruft_utils


def _rendered_files(project: Path, state: dict) -> list[bytes]:
    """The content of each file of the template at `state`'s commit rendered with its recorded
    answers, as `cruft update` renders its base: cruft's own functions, in a temporary folder
    that (as in cruft's update) is on sys.path while they run, so that the template's own Jinja
    extensions import."""
    cruft_utils = _cruft()
    directory = str(Path("repo") / state["directory"]) if state.get("directory") else "repo"
    try:
        with cruft_utils.iohelper.AltTemporaryDirectory(directory) as folder:
            render = Path(folder) / "render"
            repo = cruft_utils.cookiecutter.get_cookiecutter_repo(
                state["template"], Path(folder) / "repo"
            )
            with repo:
                cruft_utils.generate.cookiecutter_template(
                    output_dir=render,
                    repo=repo,
                    cruft_state=state,
                    project_dir=project,
                    checkout=state["commit"],
                )
            return [path.read_bytes() for path in sorted(render.rglob("*")) if path.is_file()]
    except Exception as err:  # cruft raises its own, cookiecutter's and GitPython's errors
        raise UserError(
            f"cannot render the template {state['template']} at the commit {state['commit']} "
            f"that {CRUFT_FILE} records ({type(err).__name__}: {err}); cruft update needs the "
            "same template: check that it is reachable"
        ) from None


def record_generated(project: Path) -> int:
    """Write each file of the project's generation (the template at `.cruft.json`'s commit, the
    recorded answers) into the project's git objects; returns how many. UserError when the
    project is not a git repository, has no cruft record, or the template cannot be rendered."""
    project = project.resolve()
    if _git(project, "rev-parse", "--git-dir").returncode != 0:
        raise UserError(
            f"{project} is not a git repository: cruft could only half-apply an update; "
            "first: git init && git add -A && git commit -m 'before update'"
        )
    contents = _rendered_files(project, _state(project))
    with tempfile.TemporaryDirectory(prefix="grpo-update-base-") as folder:
        paths = []
        for index, content in enumerate(contents):
            path = Path(folder) / str(index)
            path.write_bytes(content)
            paths.append(str(path))
        done = _git(project, "hash-object", "-w", "--no-filters", "--stdin-paths",
                    stdin="\n".join(paths) + "\n")  # fmt: skip
    if done.returncode != 0:
        raise UserError(f"git hash-object failed: {done.stderr.strip()}")
    return len(contents)
