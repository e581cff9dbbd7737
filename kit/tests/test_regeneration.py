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
