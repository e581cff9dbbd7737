"""grpo-kit as the template sees it: the library every generated project installs, pinned to its
version, and the one place the facts both sides need live (the tasks' data defaults, rewards and
weights, the sandbox limits, the health thresholds, the recipe fields' help).

The kit sits in this repository (`kit/`, the package `grpo_kit`), and the template always reads
its own copy (a checkout, a clone made by `cookiecutter gh:...` or `cruft update`), installed or
not: the version a project pins and the starters it is made from are this template's. Where
the template itself came from (its repository, commit and release tag) decides where a project
installs the kit from (`source`; RELEASING.md) and what its `.cruft.json` records (`origin`).
Only modules that import nothing but the standard library at load time are read here (a test
checks that the template renders with math-verify, jsonschema, trl and torch absent).
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

from grpo_template import release  # noqa: E402

STARTERS = "grpo_kit.starters"
STARTERS_DIR = KIT_SOURCE / "grpo_kit" / "starters"
VERSION = release.version(ROOT)
DISTRIBUTION = "grpo-kit"
# Template arguments that name a remote repository (cookiecutter's abbreviations and URLs).
_REMOTE = re.compile(r"^(gh:|gl:|bb:|git@|git\+|https?://|ssh://|file://)")
# URLs another machine can clone (not file://, not a path).
_PORTABLE = re.compile(r"^(https?://|ssh://|git://)")
_ABBREVIATIONS = {
    "gh:": "https://github.com/{}.git",
    "gl:": "https://gitlab.com/{}.git",
    "bb:": "https://bitbucket.org/{}",
}


def requirement(extras: tuple[str, ...] = ()) -> str:
    """The project's pin of the kit: exactly the template's version, with the kit's `extras`
    its task needs (`grpo-kit[procedural]==...`)."""
    named = f"[{','.join(extras)}]" if extras else ""
    return f"{DISTRIBUTION}{named}=={VERSION}"


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


def _tag(version: str) -> str:
    return f"v{version}"


def _tagged(template_root: Path) -> bool:
    return release.tagged(VERSION, template_root)


def _pip_url(url: str) -> str:
    """A git remote as pip's `git+` form takes it: scp-like `git@host:path` becomes
    `ssh://git@host/path`."""
    scp = re.match(r"^([\w.-]+@[\w.-]+):(?!//)(.+)$", url)
    return f"ssh://{scp.group(1)}/{scp.group(2)}" if scp else url


def _released_origin(template_root: Path) -> str | None:
    """A local checkout's `origin` URL when the kit here is the released one there: `origin`
    is clonable from another machine, the tag v<version> exists, and kit/src hashes to what
    kit/releases.json records for the version (so the tag holds exactly this kit)."""
    url = _git(template_root, "remote", "get-url", "origin")
    if not url or not _PORTABLE.match(_pip_url(url)) or not _tagged(template_root):
        return None
    return _pip_url(url) if _is_recorded(template_root) else None


def _is_recorded(template_root: Path) -> bool:
    """Whether kit/src there is the kit kit/releases.json records for its version (and so the
    kit its tag holds)."""
    return bool(release.ledger(template_root)) and not release.problems(template_root)


def source(template: str | None, template_root: Path = ROOT) -> str:
    """Where a project's `make install` gets the kit (the Makefile's KIT). A template given as
    a repository (`cookiecutter gh:org/grpo-template`, `cruft create https://...`) gives the
    release tag, `git+<url>@v<version>#subdirectory=kit` (the commit generated from when the
    clone has no such tag, a version being prepared, or its kit is not the recorded one). A
    local folder (a checkout: `make demo`, the tests) gives the same tag form from its `origin`
    when that tag holds this very kit (`_released_origin`), else the folder's `kit/`, which
    installs on this machine only (`portable` says so, `note` writes it next to KIT). An empty
    value means an index."""
    template = (template or "").strip()
    url = remote_url(template)
    if url:
        if _tagged(template_root) and _is_recorded(template_root):
            return f"git+{url}@{_tag(VERSION)}#subdirectory=kit"
        commit = _commit(template_root)
        return f"git+{url}@{commit}#subdirectory=kit" if commit else f"git+{url}#subdirectory=kit"
    folder = Path(template) if template and Path(template).is_absolute() else template_root
    released = _released_origin(folder)
    if released:
        return f"git+{released}@{_tag(VERSION)}#subdirectory=kit"
    return str((folder / "kit").resolve())


def portable(kit_source: str) -> bool:
    """Whether a KIT value installs on another machine (a CI runner): an index (empty), or a
    git URL another machine can clone."""
    if not kit_source:
        return True
    url = kit_source.removeprefix("git+")
    return kit_source.startswith("git+") and bool(_PORTABLE.match(url))


def _note(kit_source: str) -> str:
    if portable(kit_source):
        return ""
    return (
        "# on the machine that generated this project only: `make install` works only there"
        " (CI too fails); set KIT to git+<url>@v<version>\\#subdirectory=kit"
    )


def note(template: str | None, template_root: Path = ROOT) -> str:
    """The comment the Makefile writes after KIT (no space before `#`: make keeps it out of
    the value): empty when the kit installs anywhere, else a warning. It names no version, so
    a release changes no Makefile line of a project generated from a folder."""
    return _note(source(template, template_root))


def makefile_value(template: str | None, template_root: Path = ROOT) -> str:
    """KIT's line after `KIT ?= ` in the project's Makefile: the source with make's comment
    sign escaped (`#subdirectory=kit` unescaped would end the value at `@v<version>`), then
    the note."""
    kit_source = source(template, template_root)
    return kit_source.replace("#", "\\#") + _note(kit_source)


def warning(template: str | None, template_root: Path = ROOT) -> str | None:
    """The post-generation warning for a kit that installs on this machine only, or None."""
    kit_source = source(template, template_root)
    if portable(kit_source):
        return None
    return (
        f"WARNING: grpo-kit installs from {kit_source}, on this machine only: `make install`"
        " works only here, and the project's CI workflow will stop. To install it anywhere,"
        f" set KIT in the Makefile to git+<the template's URL>@v{VERSION}\\#subdirectory=kit"
        " (make needs the \\#; RELEASING.md), or generate from the repository"
        " (cookiecutter gh:<org>/grpo-template)."
    )


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
