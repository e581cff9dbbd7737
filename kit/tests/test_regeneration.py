"""`grpo update-base` (grpo_kit.regeneration): its refusals, each naming the fix and changing
nothing. The three-way merge it enables is proven through `make update` with the real cruft and
the real template (the template's tests/test_cruft.py: a project made without git, edited,
`git init` as the refusal says, then updated to another task: conflict markers, no .rej)."""

import json
import subprocess

import pytest
from grpo_kit.commands.update_base import main
from grpo_kit.errors import UserError
from grpo_kit.regeneration import record_generated


def git_repo(folder):
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    return folder


def objects(folder) -> list[str]:
    done = subprocess.run(["git", "count-objects", "-v"], cwd=folder, capture_output=True,
                          text=True, check=True)  # fmt: skip
    return done.stdout.splitlines()


def test_outside_git_it_refuses_with_the_fix(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool.grpo]\npackage = "my_project"\n')
    (tmp_path / ".cruft.json").write_text("{}")
    assert main(["--project", str(tmp_path)]) == 2
    said = capsys.readouterr().err
    assert said.startswith("update: refused, nothing changed: ")
    assert "not a git repository" in said
    assert "git init && git add -A && git commit -m 'before update'" in said


def test_without_a_cruft_record_it_says_what_records_one(tmp_path):
    git_repo(tmp_path)
    with pytest.raises(UserError, match=r"\.cruft\.json: missing.*cruft link"):
        record_generated(tmp_path)


@pytest.mark.parametrize("text", ["not json", "{}", '{"template": "x", "commit": "y"}'])
def test_a_broken_cruft_record_is_named_with_its_restore(tmp_path, text):
    git_repo(tmp_path)
    (tmp_path / ".cruft.json").write_text(text)
    with pytest.raises(UserError, match=r"not a cruft record.*git checkout -- \.cruft\.json"):
        record_generated(tmp_path)


def test_an_unreachable_template_is_named_and_nothing_is_written(tmp_path):
    pytest.importorskip("cruft")
    git_repo(tmp_path)
    state = {"template": str(tmp_path / "no-such-template"), "commit": "0" * 40,
             "context": {"cookiecutter": {"project_name": "x"}}}  # fmt: skip
    (tmp_path / ".cruft.json").write_text(json.dumps(state))
    before = objects(tmp_path)
    with pytest.raises(UserError, match=r"cannot render the template .*no-such-template"):
        record_generated(tmp_path)
    assert objects(tmp_path) == before


def commit(folder, name: str, text: str) -> None:
    (folder / name).write_text(text)
    env = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", *env, "add", "-A"], cwd=folder, check=True)
    subprocess.run(["git", *env, "commit", "-qm", "x"], cwd=folder, check=True)


def status(folder) -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=folder, capture_output=True,
                          text=True, check=True).stdout  # fmt: skip


def test_a_half_applied_update_is_put_aside_whole(tmp_path, capsys):
    """After cruft's `git apply --reject` fallback: the *.rej files it left mean a half-applied
    update; it is stashed whole (tracked changes and new files), the tree back at the commit."""
    git_repo(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.grpo]\npackage = "my_project"\n')
    commit(tmp_path, "task.py", "math\n")
    (tmp_path / "task.py").write_text("classification\n")  # applied
    (tmp_path / "rewards.py.rej").write_text("@@ a hunk @@\n")  # not placed
    (tmp_path / "new_file.py").write_text("new\n")
    assert main(["--project", str(tmp_path), "--undo-rejected"]) == 1
    said = capsys.readouterr().err
    assert "update: undone: cruft could not merge three ways and left rewards.py.rej" in said
    assert "git stash list" in said
    assert status(tmp_path) == "" and (tmp_path / "task.py").read_text() == "math\n"
    stashed = subprocess.run(["git", "stash", "list"], cwd=tmp_path, capture_output=True,
                             text=True, check=True).stdout  # fmt: skip
    assert "a half-applied cruft update" in stashed


def test_a_clean_update_is_left_as_it_is(tmp_path):
    git_repo(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.grpo]\npackage = "my_project"\n')
    commit(tmp_path, "task.py", "math\n")
    (tmp_path / "task.py").write_text("classification\n")
    assert main(["--project", str(tmp_path), "--undo-rejected"]) == 0
    assert (tmp_path / "task.py").read_text() == "classification\n"


def test_only_edited_files_the_update_drops_are_named(tmp_path):
    from grpo_kit.regeneration import edited_and_dropped

    old = {"data/sample_math.jsonl": b"row\n", "data/kept.jsonl": b"row\n", "gone.txt": b"x"}
    new = {"data/kept.jsonl": b"row\n"}
    (tmp_path / "data").mkdir()
    (tmp_path / "data/sample_math.jsonl").write_bytes(b"row\nmy row\n")  # edited, dropped
    (tmp_path / "data/kept.jsonl").write_bytes(b"edited\n")  # edited, kept: git merges it
    assert edited_and_dropped(tmp_path, old, new) == ["data/sample_math.jsonl"]
    (tmp_path / "data/sample_math.jsonl").write_bytes(b"row\n")  # as generated: removable
    assert edited_and_dropped(tmp_path, old, new) == []


def test_variables_that_are_not_a_json_object_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--project", str(tmp_path), "--variables-to-update", "task_type=code"])
    assert exit_.value.code == 2
    assert "not a JSON object" in capsys.readouterr().err
