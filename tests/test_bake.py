"""Bake every valid combination: exact files, no template leftovers, ruff-clean; refuse the rest."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, bake_ok
from matrix import INVALID, VALID, name, refusal

BASE_FILES = {
    ".cookiecutter.json",
    ".github/workflows/tests.yml",
    ".gitignore",
    "Makefile",
    "README.md",
    "pyproject.toml",
    "configs/grpo.yaml",
    "configs/reward_model.yaml",
    "configs/stages.yaml",
    "data/SOURCES.md",
    "data/sample_preferences.jsonl",
    "src/{pkg}/__init__.py",
    "src/{pkg}/training/__init__.py",
    "src/{pkg}/tools/__init__.py",
    "src/{pkg}/training/adaptive_weights.py",
    "src/{pkg}/evaluate.py",
    "src/{pkg}/training/health.py",
    "src/{pkg}/tools/report.py",
    "src/{pkg}/training/run_record.py",
    "src/{pkg}/training/stages.py",
    "src/{pkg}/training/stopping.py",
    "src/{pkg}/config.py",
    "src/{pkg}/data.py",
    "src/{pkg}/tools/doctor.py",
    "src/{pkg}/errors.py",
    "src/{pkg}/inference.py",
    "src/{pkg}/tools/gpu_check.py",
    "src/{pkg}/infer.py",
    "src/{pkg}/merge.py",
    "src/{pkg}/modeling.py",
    "src/{pkg}/project.py",
    "src/{pkg}/tools/reward_debug.py",
    "src/{pkg}/tools/filter.py",
    "src/{pkg}/rewards/__init__.py",
    "src/{pkg}/rewards/base.py",
    "src/{pkg}/rewards/formats.py",
    "src/{pkg}/tools/smoke.py",
    "src/{pkg}/tasks/__init__.py",
    "src/{pkg}/tasks/base.py",
    "src/{pkg}/tools/tiny_model.py",
    "src/{pkg}/tokenizer.py",
    "src/{pkg}/datafiles.py",
    "src/{pkg}/reward_model.py",
    "src/{pkg}/train.py",
    "tests/conftest.py",
    "tests/test_adaptive_weights.py",
    "tests/test_data.py",
    "tests/test_evaluate.py",
    "tests/test_health.py",
    "tests/test_filter.py",
    "tests/test_learning.py",
    "tests/test_model_family.py",
    "tests/test_report.py",
    "tests/test_resume.py",
    "tests/test_reward_model.py",
    "tests/test_reward_model_training.py",
    "tests/test_run_record.py",
    "tests/test_stages.py",
    "tests/test_tracking.py",
    "tests/test_doctor.py",
    "tests/test_pipeline.py",
    "tests/test_recipe.py",
    "tests/test_reward_fuzz.py",
    "tests/test_rewards.py",
}
TASK_FILES = {
    task: {
        f"src/{{pkg}}/tasks/{task}_task.py",
        f"src/{{pkg}}/rewards/{task}_rewards.py",
        f"data/sample_{task}.jsonl",
        f"tests/test_{task}_rewards.py",
    }
    for task in ("math", "code", "json", "classification", "custom", "tools")
}
SANDBOX_FILES = {
    "src/{pkg}/sandbox/__init__.py",
    "src/{pkg}/sandbox/arguments.py",
    "src/{pkg}/sandbox/harness.py",
    "src/{pkg}/sandbox/isolation.py",
    "tests/test_sandbox.py",
}
TASK_FILES["code"] |= SANDBOX_FILES | {"tests/test_code_pythons.py"}
TASK_FILES["tools"] |= SANDBOX_FILES | {
    "src/{pkg}/environments/__init__.py",
    "src/{pkg}/environments/base.py",
    "src/{pkg}/environments/episodes.py",
    "src/{pkg}/environments/python_env.py",
    "src/{pkg}/environments/lookup_env.py",
    "src/{pkg}/rewards/math_rewards.py",
    "data/sample_corpus.jsonl",
    "tests/test_environments.py",
    "tests/test_agent_learning.py",
}
# `${{ ... }}` is GitHub Actions syntax (the workflow escapes it with {% raw %}), not a leftover.
LEFTOVER = re.compile(r"(?<!\$)\{\{|\{%|\{#|(?<![.\w])cookiecutter\.(?!json)")


MULTI_GPU_FILES = {
    "configs/accelerate/none.yaml",
    "configs/accelerate/ddp.yaml",
    "configs/accelerate/zero2.yaml",
    "configs/accelerate/zero3.yaml",
    "configs/accelerate/fsdp2.yaml",
    "src/{pkg}/training/launch.py",
    "tests/test_launch.py",
}
TIER_FILES = {
    "multi-gpu": MULTI_GPU_FILES,
    "multi-node": MULTI_GPU_FILES | {"scripts/multinode.sbatch"},
}


BACKEND_FILES = {"transformers": set(), "unsloth": {"tests/test_unsloth.py"}}


def model_files(model: str) -> set[str]:
    """The offline tiny model's chat template where TRL ships none: the checkpoint's own, or
    the stand-in of a custom model."""
    from grpo_template import catalog

    name = "stand_in" if model == "custom" else catalog.CATALOG[model].chat_template
    vendored = name == "stand_in" or name in catalog.VENDORED_TEMPLATES
    return {f"src/{{pkg}}/tools/chat_templates/{name}.jinja"} if vendored else set()


def expected_files(combo) -> set[str]:
    files = BASE_FILES | TASK_FILES[combo["task_type"]] | TIER_FILES.get(combo["gpu_tier"], set())
    files |= BACKEND_FILES[combo["backend"]] | model_files(combo["model"])
    return {f.format(pkg=combo["package_name"]) for f in files}


def files_of(project: Path) -> set[str]:
    return {
        str(p.relative_to(project))
        for p in project.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.fixture(scope="module")
def baked(tmp_path_factory, worker_id):
    """Every valid combination, baked once per test session: {name: project path}.

    Baking the whole matrix takes minutes, so parallel workers share one bake: each combination
    is baked once, under its own file lock, and the workers walk the matrix from opposite ends
    so that they bake different halves and meet in the middle."""
    from cookiecutter.main import cookiecutter
    from filelock import FileLock

    session = tmp_path_factory.getbasetemp()
    if worker_id != "master":  # each xdist worker has its own folder inside the session's
        session = session.parent
    root = session / "baked-matrix"
    root.mkdir(exist_ok=True)
    forward = worker_id in ("master", "gw0") or int(worker_id.removeprefix("gw")) % 2 == 0
    projects = {}
    for combo in VALID if forward else reversed(VALID):
        folder = root / name(combo)
        with FileLock(str(folder) + ".lock"):
            if not (folder / ".complete").is_file():
                project = cookiecutter(
                    str(ROOT), no_input=True, extra_context=combo, output_dir=str(folder),
                    overwrite_if_exists=True, default_config=True,
                )  # fmt: skip
                (folder / ".complete").write_text(project)
        projects[name(combo)] = Path((folder / ".complete").read_text())
    return projects


@pytest.mark.parametrize("combo", VALID, ids=name)
def test_exact_file_set(baked, combo):
    assert files_of(baked[name(combo)]) == expected_files(combo)


@pytest.mark.parametrize("combo", VALID, ids=name)
def test_no_template_leftovers(baked, combo):
    project = baked[name(combo)]
    for relative in files_of(project):
        if relative.endswith(".jinja") or relative == ".cookiecutter.json":
            continue  # a chat template is Jinja by design; the replay record names the template
        text = (project / relative).read_text(encoding="utf-8")
        match = LEFTOVER.search(text)
        assert match is None, f"{relative}: {text[max(0, match.start() - 40) : match.end() + 40]!r}"
        assert "<package>" not in text, f"{relative} says <package> where the name is known"


def test_all_baked_projects_pass_ruff(baked):
    parents = sorted({str(p.parent) for p in baked.values()})
    # No .ruff_cache: the baked folders are shared with tests that check their exact file set.
    for command in (["check", "--no-cache"], ["format", "--check", "--no-cache"]):
        result = subprocess.run(
            [sys.executable, "-m", "ruff", *command, *parents], capture_output=True, text=True
        )
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


def test_answers_are_recorded_for_regeneration(baked):
    project = next(iter(baked.values()))
    record = json.loads((project / ".cookiecutter.json").read_text(encoding="utf-8"))
    answers = record["cookiecutter"]
    assert answers["task_type"] in ("math", "code", "json", "classification", "custom")
    assert answers["package_name"] == "matrix_project"
    assert "_output_dir" not in answers and "_repo_dir" not in answers


def try_bake(tmp_path, **answers):
    """Bake into an empty folder; returns (folder, exception or None)."""
    from cookiecutter.main import cookiecutter

    output = tmp_path / "output"
    output.mkdir()
    try:
        cookiecutter(str(ROOT), no_input=True, extra_context=answers, output_dir=str(output))
    except (Exception, SystemExit) as err:  # noqa: BLE001 - the test inspects it
        return output, err
    return output, None


@pytest.mark.parametrize("combo", INVALID, ids=name)
def test_invalid_combinations_are_refused_without_leftovers(tmp_path, combo, capfd):
    output, error = try_bake(tmp_path, **combo)
    assert error is not None
    err = capfd.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and refusal(combo) in errors[0], err
    assert not any(output.iterdir())


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ({"project_slug": "class", "package_name": "class"}, "Python keyword"),
        ({"project_slug": "import-ok", "package_name": "import"}, "Python keyword"),
        ({"project_slug": "my project"}, "project_slug"),
        ({"project_slug": "datasets", "package_name": "datasets"}, "shadow"),
        ({"model": "custom", "custom_model_id": "nope"}, "custom_model_id"),
    ],
)
def test_bad_answers_fail_to_bake_with_one_line_and_no_folder(tmp_path, answers, message, capfd):
    output, error = try_bake(tmp_path, **answers)
    assert error is not None
    err = capfd.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and message in errors[0], err
    assert not any(output.iterdir()), list(output.iterdir())


@pytest.mark.parametrize(
    "payload",
    [
        "{{ cycler.__init__.__globals__.os.system('touch SENTINEL') }}",
        "{% for c in ().__class__.__base__.__subclasses__() %}{% endfor %}",
        '"; import os; os.system("touch SENTINEL") #',
        "'''+__import__('os').system('touch SENTINEL')+'''",
        "$(touch SENTINEL) `touch SENTINEL`",
        "{{ 7 * 7 }}",
    ],
)
def test_injection_in_project_name_is_never_executed(tmp_path, monkeypatch, payload, capfd):
    monkeypatch.chdir(tmp_path)
    sentinel = tmp_path / "SENTINEL"
    text = payload.replace("SENTINEL", str(sentinel))
    output, error = try_bake(tmp_path, project_name=text, project_slug="safe-name")
    assert not sentinel.exists()
    assert error is not None  # refused by the pre-generation hook
    assert "project_name" in capfd.readouterr().err
    assert not any(output.iterdir())


def test_long_and_short_package_names_stay_ruff_clean(cookies):
    for slug in ("ab", "a-forty-character-project-slug-for-lint"):
        project = bake_ok(cookies, project_name=slug, project_slug=slug)
        for command in (["check"], ["format", "--check"]):
            result = subprocess.run(
                [sys.executable, "-m", "ruff", *command, str(project)],
                capture_output=True,
                text=True,
            )
            assert result.returncode == 0, (slug, result.stdout[-2000:])


def test_generated_workflow_runs_the_projects_own_tests(baked):
    """The GitHub Actions workflow is valid YAML, installs CPU torch first, then runs the
    project's own make targets, with GitHub's `${{ }}` expressions left for GitHub."""
    import yaml

    project = next(iter(baked.values()))
    text = (project / ".github" / "workflows" / "tests.yml").read_text(encoding="utf-8")
    assert "${{ failure() }}" in text
    steps = yaml.safe_load(text)["jobs"]["test"]["steps"]
    commands = [step["run"] for step in steps if "run" in step]
    assert "torch==" in commands[0] and "/whl/cpu" in commands[0]
    assert commands[1:] == ["make install", "make lint", "make test"]
    makefile = (project / "Makefile").read_text(encoding="utf-8")
    assert all(f"\n{target}:" in makefile for target in ("install", "lint", "test"))


def _shape(tier: str) -> str:
    return tier if tier in ("multi-gpu", "multi-node") else "single"


def _one_per(key) -> dict:
    """One baked combination per value of `key(combo)`."""
    chosen = {}
    for combo in VALID:
        chosen.setdefault(key(combo), combo)
    return chosen


def test_no_import_cycles_in_any_variant(baked):
    """Every backend x task x tier shape: the package's imports, lazy ones included, form no
    cycle (read from the source, so nothing is imported)."""
    from imports import cycles, import_graph

    variants = _one_per(lambda c: (c["backend"], c["task_type"], _shape(c["gpu_tier"])))
    # transformers: 6 tasks x 3 shapes; unsloth: no multi-GPU shapes and no tools task
    assert len(variants) == 6 * 3 + 5
    for key, combo in variants.items():
        package = baked[name(combo)] / "src" / combo["package_name"]
        graph = import_graph(package)
        assert len(graph) > 20, key
        assert cycles(graph) == [], key


DEFAULTS_OF = """
import dataclasses, json
from matrix_project.config import ScriptArguments
from matrix_project.tasks import TaskArguments
values = {}
for cls in (ScriptArguments, TaskArguments):
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            values[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            values[f.name] = f.default_factory()
print(json.dumps(values))
"""


def test_recipe_defaults_agree_with_the_generated_dataclasses(baked):
    """A value the template writes as a field's default (health thresholds, the task's data
    mapping and arguments, ...) equals that field's default in the baked project's dataclass:
    one default per field, checked field by field for every task."""
    from grpo_template import recipe
    from grpo_template.answers import Answers

    for task, combo in _one_per(lambda c: c["task_type"] if c["backend"] == "transformers"
                                else None).items():  # fmt: skip
        if task is None:
            continue
        project = baked[name(combo)]
        result = subprocess.run(
            [sys.executable, "-c", DEFAULTS_OF], cwd=project, capture_output=True, text=True,
            env={**os.environ, "PYTHONPATH": str(project / "src"), "HF_HUB_OFFLINE": "1"},
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        defaults = json.loads(result.stdout.strip().splitlines()[-1])
        answers = Answers.from_context(combo)
        written = recipe.default_values(answers.plan, answers.tracker)
        assert {"health_zero_std_max", "dataset_name", "prompt_column"} <= set(written)
        for key, value in written.items():
            assert key in defaults, f"{task}: {key} is written as a default but is no field"
            assert defaults[key] == value, (
                f"{task}: {key}: recipe {value!r}, field {defaults[key]!r}"
            )


def _help_columns(output: str) -> set[int]:
    """Where the description column starts on each line of `make help`."""
    import re

    return {len(m.group(1)) for m in re.finditer(r"^(  \S+\s+)\S", output, flags=re.M)}


def test_make_help_lines_up_in_the_template_and_a_project(baked):
    project = next(p for n, p in baked.items() if "multi-gpu" in n)  # the most targets
    for folder in (ROOT, project):
        result = subprocess.run(["make", "-s", "help"], cwd=folder, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        assert len(result.stdout.splitlines()) > 5
        assert len(_help_columns(result.stdout)) == 1, result.stdout
