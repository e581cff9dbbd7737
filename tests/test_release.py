"""Versions that move: kit/src is the kit its version recorded in kit/releases.json (the CI check,
in a fresh clone without tags), the version has a changelog entry, `make release-record` never
gives a released version a second kit, a project installs the kit by its release tag (or says
loudly that it cannot), and the generated workflow's actions are pinned by commit."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from grpo_template import kit, release

GIT = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com"]


def test_kit_src_is_the_kit_its_version_recorded():
    """The CI check: fails, in one line naming the fix, when kit/src changed and the version
    did not (or the version has no ledger entry, or no changelog entry)."""
    found = release.problems(ROOT)
    assert not found, "\n".join(found)


def test_the_current_version_has_a_changelog_entry_and_one_home():
    assert release.changelog_has(release.version(ROOT), ROOT)
    assert release.version(ROOT) == kit.VERSION  # read in one place


def git(folder: Path, *args: str) -> str:
    found = subprocess.run([*GIT, "-C", str(folder), *args], capture_output=True, text=True)
    assert found.returncode == 0, found.stderr
    return found.stdout.strip()


def fake_template(tmp_path: Path, version: str = "1.0.0", changelog: bool = True) -> Path:
    """A repository with a kit/src, its version and (optionally) its changelog entry."""
    root = tmp_path / "template"
    package = root / "kit/src/grpo_kit"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f'__version__ = "{version}"\n')
    (package / "core.py").write_text("X = 1\n")
    entry = f"## [{version}] - 2026-12-06\n- a change\n" if changelog else ""
    (root / "kit/CHANGELOG.md").write_text(f"# Changelog\n\n## [Unreleased]\n\n{entry}")
    git(root, "init", "-q")
    return root


def bump(root: Path, version: str) -> None:
    init = root / "kit/src/grpo_kit/__init__.py"
    init.write_text(re.sub(r'"[^"]+"', f'"{version}"', init.read_text()))
    changelog = root / "kit/CHANGELOG.md"
    changelog.write_text(changelog.read_text() + f"\n## [{version}] - 2026-12-07\n- more\n")


def test_the_kit_hash_is_its_files_paths_and_contents_and_nothing_built(tmp_path):
    root = fake_template(tmp_path)
    first = release.kit_hash(root)
    cache = root / "kit/src/grpo_kit/__pycache__"
    cache.mkdir()
    (cache / "core.cpython-311.pyc").write_bytes(b"\0built")
    (root / "kit/src/grpo_kit.egg-info").mkdir()
    (root / "kit/src/grpo_kit.egg-info/PKG-INFO").write_text("built")
    assert release.kit_hash(root) == first
    core = root / "kit/src/grpo_kit/core.py"
    core.write_text("X = 2\n")
    assert release.kit_hash(root) != first
    core.write_text("X = 1\n")
    assert release.kit_hash(root) == first
    core.rename(root / "kit/src/grpo_kit/other.py")  # same bytes, another path: another kit
    assert release.kit_hash(root) != first


def test_a_kit_change_without_a_bump_fails_in_one_line_that_names_the_fix(tmp_path):
    root = fake_template(tmp_path)
    assert release.problems(root) == ["grpo-kit 1.0.0 is not in kit/releases.json: " + release.BUMP]
    assert "first time" in release.record(root)
    assert release.problems(root) == []
    assert "already recorded" in release.record(root)
    (root / "kit/src/grpo_kit/core.py").write_text("X = 2  # a fix\n")
    assert release.problems(root) == [
        "kit/src changed since 1.0.0 was recorded: bump __version__ in "
        "kit/src/grpo_kit/__init__.py, add a kit/CHANGELOG.md entry, run `make release-record`"
    ]
    bump(root, "1.0.1")
    assert "first time" in release.record(root)
    assert release.problems(root) == []
    assert list(release.ledger(root)) == ["1.0.0", "1.0.1"]
    old, new = release.ledger(root).values()
    assert old != new


def test_record_never_gives_a_released_version_a_second_kit(tmp_path):
    root = fake_template(tmp_path)
    release.record(root)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "1.0.0")
    assert "tagged v1.0.0" in release.tag(root)
    assert git(root, "tag", "-l") == "v1.0.0"
    recorded = release.ledger(root)["1.0.0"]
    (root / "kit/src/grpo_kit/core.py").write_text("X = 2\n")
    with pytest.raises(release.ReleaseError, match=r"1\.0\.0 was released \(tag v1\.0\.0\)"):
        release.record(root)
    assert release.ledger(root)["1.0.0"] == recorded


def test_an_unreleased_version_is_recorded_again_until_it_is_tagged(tmp_path):
    """The lead's `make release-record` after merging more kit changes into 0.3.0."""
    root = fake_template(tmp_path)
    release.record(root)
    (root / "kit/src/grpo_kit/core.py").write_text("X = 2\n")
    assert "again, not tagged yet" in release.record(root)
    assert release.problems(root) == []


def test_versions_sort_as_numbers():
    assert release._key("0.10.0") > release._key("0.9.1") > release._key("0.9.0")
    assert release._key("0.3.0rc1") != release._key("0.3.0")  # compares, does not raise


def test_record_refuses_a_missing_changelog_entry_and_an_older_version(tmp_path):
    root = fake_template(tmp_path, changelog=False)
    with pytest.raises(release.ReleaseError, match=r"no '## \[1\.0\.0\]' entry"):
        release.record(root)
    assert "kit/CHANGELOG.md has no '## [1.0.0]' entry: add one" in release.problems(root)
    bump(root, "1.1.0")
    release.record(root)
    bump(root, "1.0.0")  # going back: 1.1.0 is recorded already
    with pytest.raises(release.ReleaseError, match=r"already records 1\.1\.0"):
        release.record(root)
    assert any("newer than __version__ 1.0.0" in line for line in release.problems(root))


def test_tag_refuses_an_unrecorded_or_uncommitted_kit(tmp_path):
    root = fake_template(tmp_path)
    with pytest.raises(release.ReleaseError, match="not in kit/releases.json"):
        release.tag(root)
    release.record(root)
    with pytest.raises(release.ReleaseError, match="commit kit/src, kit/releases.json"):
        release.tag(root)
    assert git(root, "tag", "-l") == ""


def test_release_check_command_names_the_fix(tmp_path):
    """`make release-check` as CI would see it: exit 1 and the one line."""
    script = "import sys; from grpo_template import release; sys.exit(release.main(['check']))"
    found = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert found.returncode == 0, found.stderr
    assert f"grpo-kit {kit.VERSION}: kit/src is the recorded kit" in found.stdout


# Where a project installs the kit from.


def released_checkout(tmp_path: Path, origin: str) -> Path:
    """A local checkout of a template whose version is recorded, tagged, with `origin`."""
    root = fake_template(tmp_path, version=kit.VERSION)
    release.record(root)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "release")
    release.tag(root)
    git(root, "remote", "add", "origin", origin)
    return root


def test_a_remote_template_installs_the_kit_by_its_release_tag(tmp_path):
    root = released_checkout(tmp_path, "https://github.com/org/grpo-template.git")
    url = "https://github.com/org/grpo-template.git"
    expected = f"git+{url}@v{kit.VERSION}#subdirectory=kit"
    assert kit.source("gh:org/grpo-template", root) == expected
    assert kit.portable(expected) and kit.note("gh:org/grpo-template", root) == ""
    assert kit.warning("gh:org/grpo-template", root) is None
    commit = git(root, "rev-parse", "HEAD")
    by_commit = f"git+{url}@{commit}#subdirectory=kit"
    core = root / "kit/src/grpo_kit/core.py"
    core.write_text("X = 2\n")  # not the tag's kit: the commit (that holds it)
    assert kit.source("gh:org/grpo-template", root) == by_commit
    core.write_text("X = 1\n")
    git(root, "tag", "-d", f"v{kit.VERSION}")  # a version being prepared: the commit
    assert kit.source("gh:org/grpo-template", root) == by_commit


def test_a_local_checkout_of_a_release_installs_from_its_origin(tmp_path):
    root = released_checkout(tmp_path, "git@github.com:org/grpo-template.git")
    expected = f"git+ssh://git@github.com/org/grpo-template.git@v{kit.VERSION}#subdirectory=kit"
    assert kit.source(str(root), root) == expected
    assert kit.warning(str(root), root) is None
    # The kit changed since the release: the tag no longer holds it, so the folder, loudly.
    (root / "kit/src/grpo_kit/core.py").write_text("X = 2\n")
    assert kit.source(str(root), root) == str(root / "kit")
    assert "installs from" in kit.warning(str(root), root)
    assert kit.note(str(root), root).startswith("# on the machine that generated this project")


def test_a_local_checkout_without_a_clonable_origin_installs_from_its_folder_loudly(tmp_path):
    root = released_checkout(tmp_path, str(tmp_path / "elsewhere"))  # an origin on this disk
    assert kit.source(str(root), root) == str(root / "kit")
    assert not kit.portable(str(root / "kit"))
    fix = f"set KIT in the Makefile to git+<the template's URL>@v{kit.VERSION}\\#subdirectory=kit"
    assert fix in kit.warning(str(root), root)


def test_a_local_bake_says_so_in_its_makefile_message_and_workflow(tmp_path):
    """Generated from a folder (this checkout has no release tag here): the Makefile's KIT
    carries the warning as a comment make keeps out of the value, the generation prints it, and
    the workflow's first step stops with a message naming the fix, not a pip traceback."""
    command = [sys.executable, "-m", "cookiecutter", str(ROOT), "--no-input", "-o", str(tmp_path)]
    made = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-2000:]
    project = tmp_path / "my-grpo-project"
    source, note = kit.source(str(ROOT)), kit.note(str(ROOT))
    assert f"\nKIT ?= {kit.makefile_value(str(ROOT))}\n" in (project / "Makefile").read_text()
    assert (kit.warning(str(ROOT)) in made.stdout) if note else ("WARNING" not in made.stdout)
    if not note:
        pytest.skip("this checkout's kit is a tagged release with an origin: nothing to warn")
    import yaml

    workflow = yaml.safe_load((project / ".github/workflows/tests.yml").read_text())
    step = next(s for s in workflow["jobs"]["test"]["steps"] if "KIT" in s.get("name", ""))
    env = {"PATH": os.environ["PATH"]}
    here = subprocess.run(["bash", "-ec", step["run"]], cwd=project, env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert here.returncode == 0 and f"grpo-kit from: {source}" in here.stdout, here.stderr
    elsewhere = {**env, "KIT": "/home/someone/grpo-template/kit"}  # as on a CI runner
    runner = subprocess.run(["bash", "-ec", step["run"]], cwd=project, env=elsewhere,
                            capture_output=True, text=True)  # fmt: skip
    assert runner.returncode == 1
    error = "::error::KIT = /home/someone/grpo-template/kit is on the machine that generated"
    assert runner.stdout.startswith(error)
    url = {**env, "KIT": "git+file:///home/someone/grpo-template@v1.0.0#subdirectory=kit"}
    runner = subprocess.run(["bash", "-ec", step["run"]], cwd=project, env=url,
                            capture_output=True, text=True)  # fmt: skip
    assert runner.returncode == 1 and runner.stdout.startswith("::error::KIT = git+file://")


def test_the_generated_workflow_pins_every_action_by_commit():
    """Tags move; a commit does not. Each `uses:` is owner/repo@<40 hex> # <tag>."""
    workflow = ROOT / "{{cookiecutter.project_slug}}/.github/workflows/tests.yml"
    uses = [line for line in workflow.read_text().splitlines() if "uses:" in line]
    assert len(uses) >= 3
    for line in uses:
        assert re.search(r"uses: [\w.-]+/[\w.-]+@[0-9a-f]{40}  # v\d", line), line
