"""`grpo`: the one command of a project. Its help lists every command, each command has its own
help, and what goes wrong is one `error:` line (exit code 2), never a traceback."""

import shutil
import subprocess
import sys
from importlib import metadata

import grpo_kit
import pytest
from grpo_kit import cli

COMMANDS = list(cli.COMMANDS)
# Commands that run without a project: the tiny model is written anywhere, the manual read, the
# real model built (tests/test_real_model_command.py).
ANYWHERE = {"tiny-model", "docs", "real-model"}


def grpo(argv, monkeypatch) -> int:
    """`grpo ARGV` in this process (cli.main sets sys.argv: restored after the test); its exit
    code, whether returned or raised (argparse exits on --help)."""
    monkeypatch.setattr(sys, "argv", ["grpo"])
    try:
        return cli.main(list(argv))
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 1


def error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize("argv", [["--help"], ["-h"], []])
def test_help_lists_every_command(argv, monkeypatch, capsys):
    assert grpo(argv, monkeypatch) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("usage: grpo")
    words = " ".join(shown.split())  # argparse wraps the help texts
    for name, (_, _, help_text) in cli.COMMANDS.items():
        assert f" {name} {help_text}" in words, name


def test_version_prints_the_kits_version(monkeypatch, capsys):
    assert grpo(["--version"], monkeypatch) == 0
    assert capsys.readouterr().out.strip() == f"grpo-kit {grpo_kit.__version__}"
    assert metadata.version("grpo-kit") == grpo_kit.__version__  # the installed package's


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_its_own_help(name, monkeypatch, capsys):
    """In the math project (the session's folder): usage, options, exit code 0."""
    assert grpo([name, "--help"], monkeypatch) == 0
    out = capsys.readouterr()
    assert out.out.startswith(f"usage: grpo {name}"), out.out[:200] + out.err[-2000:]
    assert "options:" in out.out and "-h, --help" in out.out
    assert "Traceback" not in out.err and not error_lines(out.err)


def test_an_unknown_command_is_refused_with_the_list(monkeypatch, capsys):
    assert grpo(["trian"], monkeypatch) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'trian'" in err and "train" in err


def test_train_on_a_bad_recipe_is_one_error_line(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("max_prompt_length: 512\n", encoding="utf-8")
    assert grpo(["train", "--config", str(bad)], monkeypatch) == 2
    err = capsys.readouterr().err
    assert len(error_lines(err)) == 1, err
    assert err.strip().splitlines()[-1].startswith(f"error: recipe: {bad}: unknown field")
    assert "max_prompt_length" in err and "Traceback" not in err


@pytest.mark.parametrize("name", [n for n in COMMANDS if n not in ANYWHERE])
def test_outside_a_project_every_command_says_so_in_one_line(name, tmp_path, monkeypatch, capsys):
    """The CLI looks for the project before it runs any command (a bug found while porting:
    `grpo reward-model` outside a project reported TRL's bf16 check instead)."""
    monkeypatch.chdir(tmp_path)  # no pyproject.toml here
    code = grpo([name], monkeypatch)
    assert code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert error_lines(err) == err.strip().splitlines()[-1:], err
    assert err.strip().startswith(f"error: no pyproject.toml in {tmp_path}: run grpo from your ")


@pytest.mark.parametrize("entry", ["python -m grpo_kit", "grpo"])
def test_the_command_runs_as_a_program(entry):
    """The console script and `python -m grpo_kit` are the same command."""
    if entry == "grpo" and shutil.which("grpo") is None:
        pytest.skip("the grpo console script is not on PATH (pip install the kit)")
    command = [sys.executable, "-m", "grpo_kit"] if entry != "grpo" else [shutil.which("grpo")]
    result = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == f"grpo-kit {grpo_kit.__version__}"
