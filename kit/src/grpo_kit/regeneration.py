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

__all__ = ["edited_and_dropped", "record_generated", "undo_rejected"]


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


def _render(cruft_utils, repo, state: dict, project: Path, out: Path, checkout) -> dict:
    """{relative path: content} of one render (cruft's own function)."""
    cruft_utils.generate.cookiecutter_template(
        output_dir=out, repo=repo, cruft_state=state, project_dir=project, checkout=checkout
    )
    return {
        path.relative_to(out).as_posix(): path.read_bytes()
        for path in sorted(out.rglob("*"))
        if path.is_file()
    }


def _renders(project: Path, state: dict, variables: dict | None) -> tuple[dict, dict]:
    """The two renders `cruft update` diffs, each {relative path: content}: the template at
    `state`'s commit with its recorded answers (the base), and at the template's latest commit
    with the answers `variables` changes. Cruft's own functions, in a temporary folder that (as
    in cruft's update) is on sys.path while they run, so the template's Jinja extensions
    import."""
    import copy

    cruft_utils = _cruft()
    directory = str(Path("repo") / state["directory"]) if state.get("directory") else "repo"
    newer = copy.deepcopy(state)
    newer["context"]["cookiecutter"].update(variables or {})
    try:
        with cruft_utils.iohelper.AltTemporaryDirectory(directory) as folder:
            repo = cruft_utils.cookiecutter.get_cookiecutter_repo(
                state["template"], Path(folder) / "repo"
            )
            with repo:
                latest = repo.head.object.hexsha  # the commit cruft update moves to
                old = _render(cruft_utils, repo, state, project, Path(folder) / "old",
                              state["commit"])  # fmt: skip
                new = _render(cruft_utils, repo, newer, project, Path(folder) / "new", latest)
            return old, new
    except Exception as err:  # cruft raises its own, cookiecutter's and GitPython's errors
        raise UserError(
            f"cannot render the template {state['template']} (at the commit {state['commit']} "
            f"that {CRUFT_FILE} records, and its latest) ({type(err).__name__}: {err}); cruft "
            "update needs the same template: check that it is reachable"
        ) from None


def edited_and_dropped(project: Path, old: dict, new: dict) -> list[str]:
    """Files the update drops (in the base render, not in the new one) that the project has
    with other content: git cannot apply their removal, and cruft's fallback (`git apply
    --reject`) then half-applies the whole update."""
    return [
        name
        for name in sorted(set(old) - set(new))
        if (project / name).is_file() and (project / name).read_bytes() != old[name]
    ]


def record_generated(project: Path, variables: dict | None = None) -> int:
    """Before `cruft update --variables-to-update variables`: refuse (UserError, nothing
    changed) when a file the update drops was edited, else write each file of the project's
    generation (the template at `.cruft.json`'s commit, the recorded answers) into the
    project's git objects; returns how many. UserError too when the project is not a git
    repository, has no cruft record, or the template cannot be rendered."""
    project = project.resolve()
    if _git(project, "rev-parse", "--git-dir").returncode != 0:
        raise UserError(
            f"{project} is not a git repository: cruft could only half-apply an update; "
            "first: git init && git add -A && git commit -m 'before update'"
        )
    old, new = _renders(project, _state(project), variables)
    kept = edited_and_dropped(project, old, new)
    if kept:
        first = kept[0]
        mine = str(Path(first).with_name("my_" + Path(first).name))
        raise UserError(
            f"{', '.join(kept)}: edited, and the update drops {'them' if len(kept) > 1 else 'it'}"
            " (the old task's own file): cruft cannot merge that and would half-apply the whole "
            f"update. Keep your version under a name of your own (git mv {first} {mine}; point "
            f"configs/local.yaml at it if it is your data) or remove it (git rm {first}), "
            "commit, then make update"
        )
    contents = list(old.values())
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


def undo_rejected(project: Path) -> list[str]:
    """After `cruft update`: the `*.rej` files it left (its `git apply --reject` fallback: a
    half-applied update). When there are any, the whole update is put aside with `git stash
    push --include-untracked` (the tree is back at the commit `make update` required, the
    half-applied result kept in `git stash list`); returns them (empty: nothing done)."""
    project = project.resolve()
    listed = _git(project, "ls-files", "--others", "--exclude-standard", "--", "*.rej")
    rejects = [line for line in listed.stdout.splitlines() if line]
    if not rejects:
        return []
    identity = []  # git stash commits: without an identity, generation's fallback one
    if not _git(project, "config", "user.email").stdout.strip():
        identity = ["-c", "user.name=grpo-template", "-c", "user.email=grpo-template@localhost"]
    done = _git(
        project,
        *identity,
        "stash",
        "push",
        "--include-untracked",
        "-q",
        "-m",
        "grpo: a half-applied cruft update (make update put it aside)",
        "--",
        ".",
    )  # fmt: skip  (this project's folder only, where make update checked)
    if done.returncode != 0:
        raise UserError(
            f"cruft left {', '.join(rejects)} and `git stash` failed ({done.stderr.strip()}): "
            "the update is half-applied; git checkout -- . && git clean -fd returns to your "
            "last commit"
        )
    return rejects
