"""Bake every valid combination: exact files, no template leftovers, ruff-clean; refuse the rest."""

import contextlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, bake_ok, hooks_in_this_process
from matrix import INVALID, VALID, name, refusal

from grpo_template import tasks

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
    "src/{pkg}/task.py",
    "src/{pkg}/rewards.py",
    "tests/conftest.py",
    "tests/test_project.py",
    "tests/test_rewards.py",
}
# `.cruft.json` (what `cruft update` reads) is written when the template is a git repository, as
# this checkout is.
TEMPLATE_IN_GIT = (
    subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True).returncode
    == 0
)
if TEMPLATE_IN_GIT:
    BASE_FILES.add(".cruft.json")
TASK_FILES = {
    task: {f"data/sample_{task}.jsonl"}
    for task in ("math", "code", "json", "classification", "custom", "tools", "procedural", "judge")
}
TASK_FILES["tools"] |= {"data/sample_corpus.jsonl"}
TASK_FILES["judge"] |= {"data/labelled_judge.jsonl"}
# `${{ ... }}` is GitHub Actions syntax (the workflow escapes it with {% raw %}), not a leftover.
LEFTOVER = re.compile(r"(?<!\$)\{\{|\{%|\{#|(?<![.\w])cookiecutter\.(?!json)")


MULTI_GPU_FILES = {
    "configs/accelerate/none.yaml",
    "configs/accelerate/ddp.yaml",
    "configs/accelerate/zero2.yaml",
    "configs/accelerate/zero3.yaml",
    "configs/accelerate/zero2.json",
    "configs/accelerate/zero3.json",
    "configs/accelerate/fsdp2.yaml",
}
TIER_FILES = {
    "multi-gpu": MULTI_GPU_FILES,
    "multi-node": MULTI_GPU_FILES | {"scripts/multinode.sbatch"},
}


def expected_files(combo) -> set[str]:
    files = BASE_FILES | TASK_FILES[combo["task_type"]] | TIER_FILES.get(combo["gpu_tier"], set())
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
    so that they bake different halves and meet in the middle. The hooks run in the worker's
    own process (conftest.hooks_in_this_process); the other tests' bakes start them as
    cookiecutter does."""
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
                with hooks_in_this_process():
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
        if relative.endswith(".jinja") or relative in (".cookiecutter.json", ".cruft.json"):
            continue  # a chat template is Jinja by design; the records name the template
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
    assert answers["task_type"] in tasks.TASKS
    assert answers["package_name"] == "matrix_project"
    assert "_output_dir" not in answers and "_repo_dir" not in answers
    if not TEMPLATE_IN_GIT:
        return
    # What cruft reads: this repository and its commit, with the same answers.
    cruft = json.loads((project / ".cruft.json").read_text(encoding="utf-8"))
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()  # fmt: skip
    assert (cruft["template"], cruft["commit"], cruft["directory"]) == (str(ROOT), head, None)
    assert cruft["context"]["cookiecutter"] == {**answers, "_template": str(ROOT), "_commit": head}


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


def test_hooks_run_in_this_process_bake_what_cookiecutters_hooks_bake(tmp_path):
    """The bake matrix's in-process hooks write the same project, byte for byte, as
    cookiecutter's own hook processes."""
    from cookiecutter.exceptions import FailedHookException
    from cookiecutter.main import cookiecutter

    combo = next(c for c in VALID if c["task_type"] == "tools" and c["gpu_tier"] == "multi-gpu")
    trees = []
    for in_process in (False, True):
        output = tmp_path / f"in-process-{in_process}"
        with hooks_in_this_process() if in_process else contextlib.nullcontext():
            project = Path(cookiecutter(str(ROOT), no_input=True, extra_context=combo,
                                        output_dir=str(output)))  # fmt: skip
        trees.append({f: (project / f).read_bytes() for f in files_of(project)})
    assert trees[0] == trees[1] and trees[0]
    # A hook that exits non-zero fails the bake, as cookiecutter's process exit does; a hook runs
    # from the project's folder and leaves this process's folder and import path as they were.
    from cookiecutter import hooks

    failing, writing = tmp_path / "failing.py", tmp_path / "writing.py"
    failing.write_text("import sys\nsys.exit(1)\n")
    writing.write_text("import sys\nsys.path.insert(0, 'x')\nopen('made', 'w').close()\n")
    folder, path = Path.cwd(), list(sys.path)
    with hooks_in_this_process():
        with pytest.raises(FailedHookException, match="exit status: 1"):
            hooks.run_script(str(failing), tmp_path)
        hooks.run_script(str(writing), output)
    assert (output / "made").is_file() and Path.cwd() == folder and sys.path == path


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
    """The GitHub Actions workflow is valid YAML, checks first that KIT installs on the runner,
    installs CPU torch first (after bubblewrap, for the tasks that run the code sandbox), then
    runs the project's own make targets, with GitHub's `${{ }}` expressions left for GitHub."""
    import yaml

    tasks = {}
    for combo in VALID:
        tasks.setdefault(combo["task_type"], baked[name(combo)])
    for task, project in tasks.items():
        text = (project / ".github" / "workflows" / "tests.yml").read_text(encoding="utf-8")
        assert "${{ failure() }}" in text
        steps = yaml.safe_load(text)["jobs"]["test"]["steps"]
        commands = [step["run"] for step in steps if "run" in step]
        assert "print-kit" in commands[0], task  # first: KIT installs here (test_release.py)
        commands = commands[1:]
        if task in ("code", "tools"):
            assert "apt-get install" in commands[0] and "bubblewrap" in commands[0], task
            commands = commands[1:]
        assert "torch==" in commands[0] and "/whl/cpu" in commands[0], task
        assert commands[1:] == ["make install", "make lint", "make test"], task
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


# Lines of Python a user owns (src/ and tests/): the default bake, and the largest tasks'. The
# train, merge and infer scripts are the kit's (`grpo eject` copies one in on request).
LINE_BUDGET = {"default": 500, "code": 700, "tools": 800}


def python_lines(project: Path) -> int:
    return sum(
        len(path.read_text(encoding="utf-8").splitlines())
        for folder in ("src", "tests")
        for path in (project / folder).rglob("*.py")
    )


def test_a_baked_project_holds_what_its_user_owns(baked):
    """The mechanism is grpo-kit's: a project's Python is its task, its rewards and the tests of
    its own task and rewards, within the line budgets; the train, merge and infer scripts are
    the kit's until the user ejects one (grpo eject)."""
    for combo in VALID:
        project = baked[name(combo)]
        task = combo["task_type"]
        budget = LINE_BUDGET.get(task, LINE_BUDGET["default"])
        assert python_lines(project) <= budget, (name(combo), python_lines(project))
        package = project / "src" / combo["package_name"]
        modules = {path.stem for path in package.glob("*.py")}
        assert modules == {"__init__", "task", "rewards"}, modules


def test_the_project_pins_the_kit_and_names_where_to_install_it_from(baked):
    """grpo-kit==<the template's version>, and the Makefile's KIT: a local bake's, its kit/
    folder with the warning that it stays on this machine, or its origin's release tag (which,
    test_release.py), so make install works without a package index release."""
    import tomllib

    from grpo_template import kit

    for combo in VALID[:3]:
        project = baked[name(combo)]
        meta = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
        extras = tasks.TASKS[combo["task_type"]].kit_extras  # e.g. grpo-kit[procedural]
        assert kit.requirement(extras) in meta["project"]["dependencies"]
        assert f"=={kit.VERSION}" in kit.requirement(extras)
        assert meta["tool"]["grpo"]["package"] == combo["package_name"]
        makefile = (project / "Makefile").read_text(encoding="utf-8")
        assert f"\nKIT ?= {kit.makefile_value(str(ROOT))}\n" in makefile


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
