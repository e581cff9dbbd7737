"""The previous release's project against this kit: the math project's own files as grpo-kit
0.2.0 generated them (data/release-0.2.0: its task, rewards, the train, merge and infer scripts
every 0.2.0 project shipped, and its tests), with the scripts declared under
`[tool.grpo.scripts]` as `grpo eject` declares them. Its reward tests pass and the offline
pipeline runs through its own scripts: a kit change that breaks a name they use fails here."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import KIT, chdir, make_project
from grpo_kit.commands import smoke
from grpo_kit.project import load

RELEASE = Path(__file__).resolve().parent / "data" / "release-0.2.0"
PACKAGE = "release_0_2_0"
SCRIPTS = {"train": "build_trainer", "merge": "merge", "infer": "infer"}


@pytest.fixture(scope="module")
def release_project(tmp_path_factory) -> Path:
    root = make_project(tmp_path_factory.mktemp("release-0.2.0"), "math")
    shutil.copytree(RELEASE, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.md"))
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    declared = "".join(f'{name} = "{PACKAGE}.{name}"\n' for name in SCRIPTS)
    text = text.replace('package = "grpo_kit.starters.math"', f'package = "{PACKAGE}"')
    (root / "pyproject.toml").write_text(f"{text}\n[tool.grpo.scripts]\n{declared}", "utf-8")
    return root


def test_the_release_declares_its_three_scripts(release_project):
    project = load(release_project)
    assert project.package == PACKAGE
    for name in SCRIPTS:
        assert project.script(name).__name__ == f"{PACKAGE}.{name}"


def test_its_own_tests_pass_with_this_kit(release_project):
    """The project's reward tests (golden cases) and its checks (recipe, ideal completions,
    hostile and 1 MB completions), as `make test-fast` runs them; its smoke test is below."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(release_project / "src"), str(KIT.parent)]),
        "GRPO_FUZZ_EXAMPLES": "100",
    }
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow",
         "-W", "ignore::pytest.PytestUnknownMarkWarning", "tests"],
        cwd=release_project, capture_output=True, text=True, env=env, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert " passed" in result.stdout and "failed" not in result.stdout


@pytest.mark.slow
def test_its_scripts_run_the_offline_pipeline(release_project, tiny_model_dir, tmp_path):
    """`grpo smoke`: train -> merge -> infer, through the release's own build_trainer, merge and
    infer (each called once), on the tiny model."""
    project = load(release_project)
    calls = []
    modules = {name: project.script(name) for name in SCRIPTS}
    originals = {name: getattr(modules[name], f) for name, f in SCRIPTS.items()}

    def counted(name):
        def call(*args, **kwargs):
            calls.append(name)
            return originals[name](*args, **kwargs)

        return call

    try:
        for name, function in SCRIPTS.items():
            setattr(modules[name], function, counted(name))
        with chdir(release_project):
            output = tmp_path / "smoke"
            answers = smoke.pipeline(
                ["--model_name_or_path", str(tiny_model_dir), "--output_dir", str(output)]
            )
    finally:
        for name, function in SCRIPTS.items():
            setattr(modules[name], function, originals[name])
    assert calls == ["train", "merge", "infer"]
    assert len(answers) == 1 and answers[0].strip()
    assert (output / "merged" / "config.json").is_file()
