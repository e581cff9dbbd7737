"""`grpo eject train|merge|infer` and the scripts a project declares: the starter copied in, one
line added to pyproject.toml, the kit calling the declared module's one function (its Protocol),
and a script file the project does not declare refused in one line, never silently ignored."""

import itertools
import sys

import pytest
from conftest import RECIPE, STARTERS, make_project
from grpo_kit import cli, merging, training
from grpo_kit.commands import eject
from grpo_kit.errors import UserError
from grpo_kit.project import SCRIPTS, load

_names = itertools.count()


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A math project with its own package in src/ (a name new to the session), run from."""
    package = f"ejected_{next(_names)}"
    made = make_project(tmp_path / "project", "math", package=package)
    monkeypatch.chdir(made)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the project's src/ goes away after
    return made


def grpo(argv, monkeypatch) -> int:
    monkeypatch.setattr(sys, "argv", ["grpo"])
    return cli.main(list(argv))


def package_dir(root):
    return root / "src" / load(root).package


def test_eject_copies_the_starter_and_declares_it(root, monkeypatch, capsys):
    before = (root / "pyproject.toml").read_text(encoding="utf-8")
    package = load(root).package
    assert grpo(["eject", "train"], monkeypatch) == 0
    out = capsys.readouterr().out
    target = package_dir(root) / "train.py"
    assert target.read_bytes() == (STARTERS / "scripts" / "train.py").read_bytes()
    after = (root / "pyproject.toml").read_text(encoding="utf-8")
    assert after == before + f'\n[tool.grpo.scripts]\ntrain = "{package}.train"\n'
    assert f"wrote src/{package}/train.py" in out
    assert f'declared train = "{package}.train" under [tool.grpo.scripts]' in out
    assert f"{package}.train.build_trainer(recipe, record=None)" in out
    project = load(root)
    assert project.scripts == {"train": f"{package}.train"}
    module = project.script("train")
    assert module.__name__ == f"{package}.train"
    assert project.function("train", training.build_trainer) is module.build_trainer
    assert project.script("merge") is None  # not ejected: the kit's own
    assert project.function("merge", merging.merge) is merging.merge


def test_a_second_script_joins_the_table_and_leaves_the_rest_of_the_file(root, monkeypatch):
    package = load(root).package
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    table = f'\n[tool.grpo.scripts]\ninfer = "{package}.infer"  # mine\n\n[tool.other]\nkey = 1\n'
    (root / "pyproject.toml").write_text(text + table, encoding="utf-8")
    (package_dir(root) / "infer.py").write_bytes((STARTERS / "scripts" / "infer.py").read_bytes())
    before = (root / "pyproject.toml").read_text(encoding="utf-8").splitlines()
    assert grpo(["eject", "merge"], monkeypatch) == 0
    after = (root / "pyproject.toml").read_text(encoding="utf-8").splitlines()
    added = after.index(f'merge = "{package}.merge"')
    assert after[:added] + after[added + 1 :] == before
    assert after[added - 1] == f'infer = "{package}.infer"  # mine'
    assert load(root).scripts == {"infer": f"{package}.infer", "merge": f"{package}.merge"}


def test_eject_never_overwrites_a_file(root, monkeypatch, capsys):
    mine = package_dir(root) / "infer.py"
    mine.write_text("# my own\n", encoding="utf-8")
    before = (root / "pyproject.toml").read_text(encoding="utf-8")
    assert grpo(["eject", "infer"], monkeypatch) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {mine} already exists: not overwriting")
    assert mine.read_text(encoding="utf-8") == "# my own\n"
    assert (root / "pyproject.toml").read_text(encoding="utf-8") == before


def test_eject_twice_says_the_script_is_yours_already(root, monkeypatch, capsys):
    assert grpo(["eject", "merge"], monkeypatch) == 0
    capsys.readouterr()
    assert grpo(["eject", "merge"], monkeypatch) == 2
    assert "already declares merge" in capsys.readouterr().err


def test_eject_help_names_the_scripts_and_the_functions(monkeypatch, capsys):
    with pytest.raises(SystemExit) as stop:
        grpo(["eject", "--help"], monkeypatch)
    assert stop.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "{train,merge,infer}" in text and "build_trainer(recipe, record=None)" in text
    assert "never overwritten" in text


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_an_undeclared_script_file_is_refused_in_one_line(root, name, monkeypatch, capsys):
    """A project from grpo-kit 0.2.0 keeps its train.py (merge.py, infer.py) through `cruft
    update`: the kit would not run it, so every command says so, with both ways out."""
    (package_dir(root) / f"{name}.py").write_bytes(
        (STARTERS / "scripts" / f"{name}.py").read_bytes()
    )
    package = load(root).package
    with pytest.raises(UserError) as refused:
        load(root).script("train")
    message = str(refused.value)
    assert "\n" not in message and message.startswith(str(package_dir(root) / f"{name}.py"))
    assert f'add `{name} = "{package}.{name}"` under [tool.grpo.scripts]' in message
    assert f"grpo eject {name}" in message and "delete it" in message
    assert grpo(["train", "--help"], monkeypatch) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {message}"]


def test_a_declared_module_without_its_function_is_one_line(root):
    package = load(root).package
    (package_dir(root) / "merge.py").write_text("def main():\n    pass\n", encoding="utf-8")
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    (root / "pyproject.toml").write_text(
        text + f'\n[tool.grpo.scripts]\nmerge = "{package}.merge"\ninfer = "{package}.gone"\n',
        encoding="utf-8",
    )
    with pytest.raises(UserError, match=r"has no function merge\(\).*MergeScript"):
        load(root).script("merge")
    with pytest.raises(UserError, match=r"infer = '.*\.gone' cannot be imported"):
        load(root).script("infer")


def test_an_unknown_script_name_is_refused(root):
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    (root / "pyproject.toml").write_text(
        text + '\n[tool.grpo.scripts]\nevaluate = "x.evaluate"\n', encoding="utf-8"
    )
    with pytest.raises(UserError, match=r"\[tool.grpo.scripts\] evaluate = 'x.evaluate'"):
        load(root)


def test_the_kit_trains_with_the_declared_build_trainer(root):
    """`grpo train` (smoke, stages, try) builds the trainer with the declared script's function,
    and calls nothing else of it."""
    package = load(root).package
    (package_dir(root) / "mine.py").write_text(
        "from grpo_kit.errors import UserError\n\n\n"
        "def build_trainer(recipe, record=None):\n"
        "    raise UserError(f'my build_trainer, {recipe.training.max_steps} steps')\n",
        encoding="utf-8",
    )
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    (root / "pyproject.toml").write_text(
        text + f'\n[tool.grpo.scripts]\ntrain = "{package}.mine"\n', encoding="utf-8"
    )
    argv = ["--config", RECIPE, "--smoke", "--max_steps", "3", "--output_dir", str(root / "o")]
    with pytest.raises(UserError, match="my build_trainer, 3 steps"):
        training.run(None, argv, project=load(root))
    assert training.command(argv) == 2


def test_the_declaration_is_added_as_text():
    text = '[tool.grpo]\npackage = "p"\n\n[tool.grpo.scripts]\ntrain = "p.train"\n\n[x]\ny = 1'
    assert eject.with_declaration(text, "merge", "p.merge") == (
        '[tool.grpo]\npackage = "p"\n\n[tool.grpo.scripts]\ntrain = "p.train"\nmerge = "p.merge"\n'
        "\n[x]\ny = 1"
    )
    assert eject.with_declaration("a = 1", "infer", "p.infer") == (
        'a = 1\n\n[tool.grpo.scripts]\ninfer = "p.infer"\n'
    )
