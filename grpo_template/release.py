"""Releases of the template and grpo-kit together: one version (the kit's `__version__`), one
changelog (`kit/CHANGELOG.md`), one tag (`v<version>`), and the ledger `kit/releases.json`
that ties each version to exactly one kit: the SHA-256 of `kit/src`'s files (their sorted
paths and contents; `__pycache__`, compiled files and `*.egg-info` left out).

The ledger is committed, so the check needs no tag and no history: in a fresh clone (CI clones
main, tags may not travel), `kit/src` either hashes to what its version recorded or it changed
without a bump. `record` writes the current version's hash; a version whose tag `v<version>`
exists, or that a newer version follows in the ledger, keeps its hash for good (a version names
one kit). Until its tag is made, the newest version is being prepared and may be recorded again.

    python -m grpo_template.release check    # the CI check, as tests/test_release.py runs it
    python -m grpo_template.release record   # `make release-record`
    python -m grpo_template.release tag      # `make release-tag`: git tag v<version> at HEAD

Only the standard library: `grpo_template.kit` reads this at generation time.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KIT_SOURCE = Path("kit/src")
LEDGER = Path("kit/releases.json")
CHANGELOG = Path("kit/CHANGELOG.md")
VERSION_FILE = KIT_SOURCE / "grpo_kit" / "__init__.py"
_SKIPPED_FOLDERS = ("__pycache__",)
_SKIPPED_SUFFIXES = (".pyc", ".pyo", ".egg-info")
BUMP = (
    "bump __version__ in kit/src/grpo_kit/__init__.py, add a kit/CHANGELOG.md entry, "
    "run `make release-record`"
)


class ReleaseError(Exception):
    """A one-line refusal that names the fix."""


def version(root: Path = ROOT) -> str:
    """The kit's (and the template's) version: `__version__` in grpo_kit/__init__.py."""
    found = re.search(r'__version__ = "([^"]+)"', (root / VERSION_FILE).read_text("utf-8"))
    if not found:
        raise ReleaseError(f'no __version__ = "..." line in {VERSION_FILE}')
    return found.group(1)


def _key(text: str) -> tuple:
    """A version as a sortable key: 0.10.0 after 0.9.1 (each part: its number, then the rest,
    so 0.3.0rc1 compares with 0.3.0 instead of failing)."""
    parts = (re.match(r"(\d*)(.*)", part).groups() for part in re.split(r"[.+-]", text))
    return tuple((int(number) if number else -1, rest) for number, rest in parts)


def _files(base: Path, only: str | None = None) -> list[Path]:
    """The files under base (or under base/only), relative to base, sorted; nothing built."""
    files = []
    for path in (base / only if only else base).rglob("*"):
        relative = path.relative_to(base)
        if any(p in _SKIPPED_FOLDERS or p.endswith(_SKIPPED_SUFFIXES) for p in relative.parts):
            continue
        if path.is_file():
            files.append(relative)
    return sorted(files, key=lambda p: p.as_posix())


def folder_hash(base: Path, only: str | None = None) -> str:
    """SHA-256 over the files under base (or only base/only): each one's path relative to base,
    then its length and bytes. `folder_hash(site_packages, "grpo_kit")` of an installed kit
    equals the `kit_hash` of the kit/src it was built from."""
    digest = hashlib.sha256()
    for relative in _files(base, only):
        data = (base / relative).read_bytes()
        digest.update(relative.as_posix().encode() + b"\0" + str(len(data)).encode() + b"\0")
        digest.update(data)
    return digest.hexdigest()


def kit_files(root: Path = ROOT) -> list[Path]:
    """The files whose contents make the kit, relative to kit/src, sorted."""
    return _files(root / KIT_SOURCE)


def kit_hash(root: Path = ROOT) -> str:
    """SHA-256 over kit/src's files (`folder_hash`)."""
    return folder_hash(root / KIT_SOURCE)


def ledger(root: Path = ROOT) -> dict[str, str]:
    """kit/releases.json: version -> the SHA-256 of its kit ({} when absent)."""
    path = root / LEDGER
    if not path.is_file():
        return {}
    return json.loads(path.read_text("utf-8"))


def write_ledger(entries: dict[str, str], root: Path = ROOT) -> None:
    ordered = dict(sorted(entries.items(), key=lambda item: _key(item[0])))
    (root / LEDGER).write_text(json.dumps(ordered, indent=2) + "\n", encoding="utf-8")


def changelog_has(version_: str, root: Path = ROOT) -> bool:
    """Whether kit/CHANGELOG.md has a `## [<version>]` heading (Keep a Changelog)."""
    path = root / CHANGELOG
    if not path.is_file():
        return False
    heading = re.compile(rf"^## \[{re.escape(version_)}\]", re.MULTILINE)
    return bool(heading.search(path.read_text("utf-8")))


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)


def tagged(version_: str, root: Path = ROOT) -> bool:
    """Whether this repository has the tag v<version> (a released version)."""
    try:
        return _git(root, "rev-parse", "-q", "--verify", f"refs/tags/v{version_}").returncode == 0
    except OSError:
        return False


def problems(root: Path = ROOT) -> list[str]:
    """What keeps the current tree from being a release: each a line that names the fix."""
    current = version(root)
    found = []
    recorded = ledger(root).get(current)
    if recorded is None:
        found.append(f"grpo-kit {current} is not in {LEDGER}: {BUMP}")
    elif recorded != kit_hash(root):
        found.append(f"kit/src changed since {current} was recorded: {BUMP}")
    newer = [v for v in ledger(root) if _key(v) > _key(current)]
    if newer:
        found.append(f"{LEDGER} records {', '.join(newer)}, newer than __version__ {current}")
    if not changelog_has(current, root):
        found.append(f"{CHANGELOG} has no '## [{current}]' entry: add one")
    return found


def record(root: Path = ROOT) -> str:
    """Record the current version's kit in the ledger; refuse to give a released version (or
    one a newer version follows) another kit. Returns what it did, in a line."""
    current = version(root)
    if not changelog_has(current, root):
        raise ReleaseError(f"{CHANGELOG} has no '## [{current}]' entry: write it, then record")
    entries = ledger(root)
    digest = kit_hash(root)
    recorded = entries.get(current)
    if recorded == digest:
        return f"grpo-kit {current} is already recorded with this kit ({digest[:12]})"
    newer = [v for v in entries if _key(v) > _key(current)]
    if newer:
        raise ReleaseError(
            f"{LEDGER} already records {', '.join(newer)}: bump __version__ past {newer[-1]}"
        )
    if recorded is not None and tagged(current, root):
        raise ReleaseError(
            f"grpo-kit {current} was released (tag v{current}) with another kit "
            f"({recorded[:12]}): {BUMP}"
        )
    entries[current] = digest
    write_ledger(entries, root)
    again = "again, not tagged yet" if recorded else "for the first time"
    return f"recorded grpo-kit {current} = {digest[:12]} in {LEDGER} ({again})"


def tag(root: Path = ROOT) -> str:
    """`git tag -a v<version>` at HEAD, when the tree is a release and committed."""
    found = problems(root)
    if found:
        raise ReleaseError(found[0])
    current = version(root)
    paths = [str(KIT_SOURCE), str(LEDGER), str(CHANGELOG)]
    dirty = _git(root, "status", "--porcelain", "--", *paths).stdout.strip()
    if dirty:
        raise ReleaseError(f"commit {', '.join(paths)} first: the tag must hold the recorded kit")
    if tagged(current, root):
        raise ReleaseError(f"v{current} is already tagged: bump __version__ for a new release")
    made = _git(root, "tag", "-a", f"v{current}", "-m", f"grpo-template and grpo-kit {current}")
    if made.returncode != 0:
        raise ReleaseError(f"git tag v{current} failed: {made.stderr.strip()}")
    return f"tagged v{current}; publish it: git push origin HEAD v{current}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    actions = {"check": None, "record": record, "tag": tag}
    if len(argv) != 1 or argv[0] not in actions:
        print("usage: python -m grpo_template.release check|record|tag", file=sys.stderr)
        return 2
    try:
        if argv[0] == "check":
            found = problems()
            for line in found:
                print(line, file=sys.stderr)
            if not found:
                print(f"grpo-kit {version()}: kit/src is the recorded kit")
            return 1 if found else 0
        print(actions[argv[0]]())
    except ReleaseError as error:
        print(f"{argv[0]}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
