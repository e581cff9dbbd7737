"""Gold answers the task cannot read are counted, not silent: a math file whose solutions are
prose ("...so the answer is 84.") left math_correctness n/a on most rows while reward-debug said
"ideal at top: yes" and exited 0, doctor said "columns valid", and training would get no
correctness signal. Above data.UNREADABLE_GOLD_SHARE doctor and reward-debug name the rows;
above data.MOST_GOLDS_UNREADABLE `grpo train` refuses, unless allow_unreadable_golds is set."""

import dataclasses
import json

import pytest
from conftest import rows_of, sample_recipe
from grpo_kit import data
from grpo_kit.commands import doctor, reward_debug


@pytest.fixture
def math_recipe(projects, monkeypatch):
    root = projects("math")
    monkeypatch.chdir(root)
    return sample_recipe(root)


def with_prose_golds(recipe, tmp_path, prose: int, rows: int = 8):
    """The first `rows` sample rows, the first `prose` of them with a gold answer in prose."""
    sample = recipe.project.root / recipe.project.task.data.sample
    lines = [json.loads(line) for line in sample.read_text("utf-8").splitlines() if line.strip()]
    chosen = lines[:rows]
    for row in chosen[:prose]:
        final = row["answer"].rsplit("####", 1)[1].strip()
        row["answer"] = f"Working it out step by step, so the answer is {final}."
    path = tmp_path / "prose.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in chosen), encoding="utf-8")
    return recipe._replace(script=dataclasses.replace(recipe.script, dataset_name=str(path)))


def test_most_golds_unreadable_blocks_training_unless_allowed(math_recipe, tmp_path, caplog):
    recipe = with_prose_golds(math_recipe, tmp_path, prose=7)
    rows = rows_of(recipe)
    found = data.unreadable_golds(rows, recipe)
    assert found.reward == "math_correctness" and found.rows == tuple(range(7))
    with pytest.raises(data.DataError) as err:
        data.refuse_unreadable_golds(rows, recipe)
    message = str(err.value)
    assert "7 of 8 gold answers" in message and "(rows 1, 2, 3, 4, 5 and 2 more; row 1: " in message
    assert "so the answer is" in message and "allow_unreadable_golds: true" in message
    allowed = recipe._replace(
        script=dataclasses.replace(recipe.script, allow_unreadable_golds=True)
    )
    data.refuse_unreadable_golds(rows, allowed)  # trains, with a warning
    assert "7 of 8 gold answers" in caplog.text


def test_a_few_unreadable_golds_warn_and_none_pass(math_recipe, tmp_path):
    recipe = with_prose_golds(math_recipe, tmp_path, prose=2)
    blocks, message = data.gold_problem(rows_of(recipe), recipe, "prose.jsonl")
    assert not blocks and "2 of 8 gold answers" in message
    assert data.gold_problem(rows_of(math_recipe), math_recipe, "sample") is None


def test_doctor_names_the_rows(math_recipe, tmp_path):
    recipe = with_prose_golds(math_recipe, tmp_path, prose=7)
    findings = doctor.check_data(recipe, 8, True, False)
    golds = [f for f in findings if f.check == "gold answers"]
    assert [f.level for f in golds] == [doctor.FAIL] and "rows 1, 2, 3" in golds[0].message


def test_reward_debug_fails_on_unreadable_golds(math_recipe, tmp_path, capsys):
    recipe = with_prose_golds(math_recipe, tmp_path, prose=7)
    assert reward_debug.main(["--data", recipe.script.dataset_name]) != 0
    out = capsys.readouterr()
    assert "7 of 8 gold answers" in out.out + out.err
    allowed = ["--data", recipe.script.dataset_name, "--allow_unreadable_golds", "true"]
    assert reward_debug.main(allowed) == 0  # a task whose correctness skips rows on purpose
    assert "allowed by allow_unreadable_golds" in capsys.readouterr().out
