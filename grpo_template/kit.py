"""grpo-kit as the template sees it: the library every generated project installs, pinned to its
version, and the one place the facts both sides need live (the tasks' data defaults, rewards and
weights, the sandbox limits, the health thresholds, the recipe fields' help).

The kit sits in this repository (`kit/`, the package `grpo_kit`), and the template always reads
its own copy (a checkout, a clone made by `cookiecutter gh:...` or `cruft update`), installed or
not: the version a project pins and the starters it is made from are this template's. Where
the template itself came from (its repository and commit) decides where a project installs the
kit from (`source`) and what its `.cruft.json` records (`origin`). Only modules that import
nothing but the standard library at load time are read here (a test checks that the template
renders with math-verify, jsonschema, trl and torch absent).
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KIT_DIR = ROOT / "kit"
KIT_SOURCE = KIT_DIR / "src"
if "grpo_kit" not in sys.modules:  # this template's kit first, whatever else is installed
    sys.path.insert(0, str(KIT_SOURCE))

import grpo_kit  # noqa: E402, F401

STARTERS = "grpo_kit.starters"
STARTERS_DIR = KIT_SOURCE / "grpo_kit" / "starters"
VERSION = re.search(
    r'__version__ = "([^"]+)"', (KIT_SOURCE / "grpo_kit" / "__init__.py").read_text("utf-8")
).group(1)
DISTRIBUTION = "grpo-kit"
# Template arguments that name a remote repository (cookiecutter's abbreviations and URLs).
_REMOTE = re.compile(r"^(gh:|gl:|bb:|git@|git\+|https?://|ssh://)")
_ABBREVIATIONS = {
    "gh:": "https://github.com/{}.git",
    "gl:": "https://gitlab.com/{}.git",
    "bb:": "https://bitbucket.org/{}",
}


def requirement() -> str:
    """The project's pin of the kit: exactly the template's version."""
    return f"{DISTRIBUTION}=={VERSION}"


def _git(folder: Path, *args: str) -> str | None:
    """`git -C folder <args>`'s output, or None (no git, not a repository)."""
    try:
        found = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True, text=True, check=True, timeout=10,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return found.stdout.strip() or None


def _commit(folder: Path) -> str | None:
    return _git(folder, "rev-parse", "HEAD")


def remote_url(template: str) -> str | None:
    """A template argument that names a remote repository, as git clones it (cookiecutter's
    `gh:`/`gl:`/`bb:` abbreviations expanded, `git+` dropped); None for a local folder."""
    if not _REMOTE.match(template):
        return None
    url = template
    for prefix, form in _ABBREVIATIONS.items():
        if url.startswith(prefix):
            url = form.format(url[len(prefix) :])
    return url.removeprefix("git+")


def source(template: str | None, template_root: Path = ROOT) -> str:
    """Where a project's `make install` gets the kit (the Makefile's KIT): the template it was
    generated from. A template given as a repository (`cookiecutter gh:org/grpo-template`,
    `cruft create https://...`) gives `git+<url>@<commit>#subdirectory=kit`, the commit being
    the one generated from; a local folder (a checkout: `make demo`, the tests) gives that
    folder's `kit/`. An empty value means PyPI (once released)."""
    template = (template or "").strip()
    url = remote_url(template)
    if url:
        commit = _commit(template_root)
        return f"git+{url}@{commit}#subdirectory=kit" if commit else f"git+{url}#subdirectory=kit"
    folder = Path(template) if template and Path(template).is_absolute() else template_root
    return str((folder / "kit").resolve())


@dataclass(frozen=True)
class Origin:
    """Where a project's template is, as cruft records it (`.cruft.json`): the repository to
    clone (a URL, or a local repository's absolute path), the commit generated from, and the
    template's folder inside the repository (None at its root)."""

    template: str
    commit: str
    directory: str | None


def origin(template: str | None, template_root: Path = ROOT) -> Origin | None:
    """The git repository this template was generated from (`cookiecutter`'s template argument;
    `template_root` is the folder cookiecutter read, its clone for a remote one), or None when
    that folder is not in a git repository (cruft can only update from one)."""
    commit = _commit(template_root)
    top = _git(template_root, "rev-parse", "--show-toplevel")
    if commit is None or top is None:
        return None
    top = Path(top).resolve()
    inside = Path(template_root).resolve().relative_to(top).as_posix()
    url = remote_url((template or "").strip()) or str(top)
    return Origin(url, commit, None if inside == "." else inside)
