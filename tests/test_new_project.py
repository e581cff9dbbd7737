"""A generated project starts as a git repository with a first commit (grpo_template.new_project):
unless the user opts out, the project lies in a work tree already, or git is missing (then the
generation says so and goes on); the first commit names the user, or the template where git has
no identity configured. Real cruft renders are recognised (tests/test_cruft.py)."""

import subprocess
from pathlib import Path

import pytest

from grpo_template import new_project


@pytest.fixture
def no_identity(tmp_path, monkeypatch):
    """A git without any user configured (no global or system configuration)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                 "GIT_COMMITTER_EMAIL", "EMAIL"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))


def project_in(folder: Path) -> Path:
    project = folder / "my-grpo-project"
    (project / "src").mkdir(parents=True)
    (project / "src/task.py").write_text("TASK = 1\n")
    (project / "Makefile").write_text("all:\n")
    return project


def git(project: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=project, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_first_commit_of_every_file_with_the_template_identity_where_none_is_set(
    tmp_path, no_identity
):
    project = project_in(tmp_path)
    said = new_project.start_repository(project, environ={})
    assert "first commit" in said
    assert git(project, "status", "--porcelain") == ""
    assert git(project, "ls-files").split() == ["Makefile", "src/task.py"]
    author = git(project, "log", "--format=%an <%ae>|%s").strip()
    assert author == "grpo-template <grpo-template@localhost>|Generated from grpo-template"
    found = subprocess.run(["git", "config", "user.name"], cwd=project, capture_output=True)
    assert found.returncode != 0  # the identity was for that commit only, not stored


def test_the_users_own_identity_when_set(tmp_path, no_identity, monkeypatch):
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Ada\n\temail = ada@example.com\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    project = project_in(tmp_path)
    new_project.start_repository(project, environ={})
    assert git(project, "log", "--format=%an <%ae>").strip() == "Ada <ada@example.com>"


@pytest.mark.parametrize("value", ["1", "true", "yes"])
def test_the_opt_out(tmp_path, no_identity, value):
    project = project_in(tmp_path)
    said = new_project.start_repository(project, environ={"GRPO_NO_GIT": value})
    assert not (project / ".git").exists()
    assert "GRPO_NO_GIT" in said and "git init" in said


def test_inside_a_work_tree_no_nested_repository(tmp_path, no_identity):
    outer = tmp_path / "monorepo"
    outer.mkdir()
    git(outer, "init", "-q")
    project = project_in(outer)
    said = new_project.start_repository(project, environ={})
    assert not (project / ".git").exists()
    assert "existing repository" in said


def test_in_a_folder_the_outer_repository_ignores_its_own_repository(tmp_path, no_identity):
    outer = tmp_path / "checkout"
    outer.mkdir()
    git(outer, "init", "-q")
    (outer / ".gitignore").write_text("build/\n")
    project = project_in(outer / "build")
    assert "first commit" in new_project.start_repository(project, environ={})
    assert (project / ".git").is_dir()


def test_without_git_the_generation_goes_on_and_says_so(tmp_path, no_identity, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    project = project_in(tmp_path)
    said = new_project.start_repository(project, environ={})
    assert not (project / ".git").exists()
    assert said.startswith("git: not found") and "make update" in said


def test_no_cruft_on_the_stack_is_no_cruft_render():
    assert new_project.rendering_for_cruft_diff() is False
