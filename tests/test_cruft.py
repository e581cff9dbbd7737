"""Regenerating with cruft: `cruft create`, then `cruft update` to another task keeps the
user's own files (a reward module, configs/local.yaml) and brings the new task's files; a
kit-only fix reaches a project as a change of its grpo-kit pin and nothing else. A project made by
plain `cookiecutter` (the README's first command) carries the `.cruft.json` cruft needs, and a
task switch never drops a file the user edited, nor keeps it without a word."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, assert_ok, run_in

GIT = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com"]

MY_REWARD = '''"""My own reward: the template never writes this file."""

from grpo_kit.rewards import reward


@reward(low=0.0, high=1.0)
def brevity(completion: str, **row) -> float:
    return 1.0 if len(completion) < 200 else 0.0
'''
MY_OVERRIDES = "max_steps: 7  # mine\nlearning_rate: 3.0e-05\n"


def git(folder: Path, *args: str) -> None:
    assert_ok(subprocess.run([*GIT, *args], cwd=folder, capture_output=True, text=True))


def template_repository(tmp_path: Path) -> Path:
    """This working tree (committed or not) as a git repository, as cruft reads templates."""
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    copy = tmp_path / "template"
    for name in files:
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    git(copy, "init", "-q")
    git(copy, "add", "-A")
    git(copy, "commit", "-qm", "template")
    return copy


def cruft_created(tmp_path: Path) -> Path:
    """`cruft create` of this template with its defaults: the generation made it a git
    repository, every file in its first commit (cruft's .cruft.json among them)."""
    template = template_repository(tmp_path)
    out = tmp_path / "projects"
    out.mkdir()
    assert_ok(cruft(out, "create", str(template), "--no-input"))
    project = out / "my-grpo-project"
    assert_started(project)
    return project


def assert_started(project: Path) -> None:
    """The project is a git repository of its own, with one commit and nothing left out."""
    log = subprocess.run(["git", "log", "--format=%s"], cwd=project, capture_output=True,
                         text=True)  # fmt: skip
    assert log.stdout.splitlines() == ["Generated from grpo-template"], log.stdout + log.stderr
    assert status(project) == ""
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=project,
                         capture_output=True, text=True)  # fmt: skip
    assert Path(top.stdout.strip()) == project.resolve()


def user_env() -> dict:
    """The environment a user generates in: without the test suite's opt-out of git."""
    env = dict(os.environ)
    env.pop("GRPO_NO_GIT", None)
    return env


def cookiecutter_generated(tmp_path: Path, template: Path) -> Path:
    """The README's first command, `cookiecutter <template> --no-input`, from a git repository
    of this template: the project is a git repository with a first commit."""
    out = tmp_path / "generated"
    command = [sys.executable, "-m", "cookiecutter", str(template), "--no-input", "-o", str(out)]
    assert_ok(subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                             env=user_env()))  # fmt: skip
    project = out / "my-grpo-project"
    assert_started(project)
    return project


def status(project: Path) -> str:
    found = subprocess.run(["git", "status", "--porcelain"], cwd=project, capture_output=True,
                           text=True)  # fmt: skip
    return found.stdout


def cruft(folder: Path, *args: str):
    return subprocess.run(
        [sys.executable, "-m", "cruft", *args], cwd=folder, capture_output=True, text=True,
        timeout=600, env=user_env(),
    )  # fmt: skip


def interactive_update(project: Path, variables: str, answers: tuple[str, ...]) -> str:
    """`cruft update` in a pseudo-terminal, answering its "Apply diff and update?" prompt in
    turn (the path `-y` skips, where an incompatible typer once crashed); returns the output."""
    import pexpect

    env = {**user_env(), "GIT_PAGER": "cat", "PAGER": "cat", "TERM": "dumb"}
    command = ["-m", "cruft", "update", "--variables-to-update", variables]
    child = pexpect.spawn(sys.executable, command, cwd=str(project), env=env, encoding="utf-8",
                          timeout=600)  # fmt: skip
    output = []
    for answer in answers:
        child.expect("Apply diff and update")
        output.append(child.before)
        child.sendline(answer)
    child.expect(pexpect.EOF)
    output.append(child.before)
    child.close()
    transcript = "".join(output)
    assert child.exitstatus == 0, transcript[-3000:]
    return transcript


def commit_all(folder: Path, message: str) -> None:
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", message)


# pip's spellings of --no-deps and --no-build-isolation (sic: "0" turns isolation off): the
# virtual environment sees this one's packages (torch, trl, ...), and builds use its hatchling
# (and editables, for the project's `-e .`).
INSTALL_ENV = {"PIP_NO_DEPS": "1", "PIP_NO_BUILD_ISOLATION": "0"}


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """One virtual environment for every `make install` here, made once: it installs grpo-kit
    and the project into itself only (this environment's own grpo-kit stays as it is)."""
    folder = tmp_path_factory.mktemp("venv")
    command = [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages"]
    subprocess.run([*command, str(folder)], check=True)
    python = folder / "bin" / "python"
    install = [str(python), "-m", "pip", "install", "-q", "hatchling", "editables"]
    assert_ok(subprocess.run(install, capture_output=True, text=True, timeout=600))
    return python


def make_install(project: Path, python: Path, deps: bool = False, **variables: str):
    """The project's `make install` in the virtual environment (its grpo-kit from an earlier
    install removed first; `deps`: resolve the project's dependencies, as an index install of
    the kit needs); returns the grpo-kit installed: its version and the SHA-256 of its files,
    as kit/releases.json records a kit."""
    from grpo_template import release

    pip = [str(python), "-m", "pip"]
    subprocess.run([*pip, "uninstall", "-y", "-q", "grpo-kit"], capture_output=True, timeout=300)
    command = ["make", "install", f"PYTHON={python}", *(f"{k}={v}" for k, v in variables.items())]
    env = {**os.environ, **INSTALL_ENV}
    env.pop("PYTHONPATH", None)
    if deps:
        env.pop("PIP_NO_DEPS")
    made = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True,
                          timeout=900)  # fmt: skip
    assert_ok(made)
    probe = (
        "import grpo_kit, importlib.metadata as m; print(m.version('grpo-kit'), grpo_kit.__file__)"
    )
    found = subprocess.run([str(python), "-c", probe], cwd=project.parent, env=env,
                           capture_output=True, text=True)  # fmt: skip
    assert_ok(found)
    version, where = found.stdout.split()
    site = Path(where).parent.parent
    assert site.is_relative_to(python.parent.parent), where  # the venv's, not this environment's
    return version, release.folder_hash(site, "grpo_kit")


def release_kit(template: Path, addition: str) -> str:
    """Cut a kit release in a template repository as RELEASING.md says: bump the patch version,
    change the kit, a changelog entry, `make release-record`, commit, `make release-tag`."""
    from grpo_template import release

    version_file = template / "kit/src/grpo_kit/__init__.py"
    old = version_file.read_text()
    version = release.version(template)
    bumped = ".".join([*version.split(".")[:-1], str(int(version.split(".")[-1]) + 1)])
    version_file.write_text(old.replace(f'"{version}"', f'"{bumped}"'))
    training = template / "kit/src/grpo_kit/training.py"
    training.write_text(training.read_text() + addition)
    changelog = template / "kit/CHANGELOG.md"
    entry = f"## [{bumped}] - 2026-12-07\n\n### Fixed\n- a fix inside the kit\n\n"
    changelog.write_text(
        changelog.read_text().replace(f"## [{version}]", entry + f"## [{version}]")
    )
    release.record(template)
    commit_all(template, f"grpo-kit {bumped}: a fix")
    git(template, "config", "user.name", "test")  # the annotated tag's tagger
    git(template, "config", "user.email", "test@example.com")
    release.tag(template)
    return bumped


@pytest.mark.slow
def test_cruft_update_to_another_task_keeps_user_files(tmp_path):
    project = cruft_created(tmp_path)
    record = json.loads((project / ".cruft.json").read_text())
    assert record["context"]["cookiecutter"]["task_type"] == "math"
    package = project / "src/my_grpo_project"
    (package / "my_rewards.py").write_text(MY_REWARD)
    local = MY_OVERRIDES + "reward_funcs: [code_correctness, my_grpo_project.my_rewards.brevity]\n"
    local += "reward_weights: [2.0, 0.5]\n"
    (project / "configs/local.yaml").write_text(local)
    readme = project / "README.md"  # an edit to a generated file, on lines the update keeps
    readme.write_text(readme.read_text().replace("## Quick start", "## Quick start (my notes)"))
    commit_all(project, "my changes")

    # As a user runs it: at the prompt, "v" shows the diff, then "y" applies it.
    transcript = interactive_update(project, '{"task_type": "code"}', answers=("v", "y"))
    assert "diff --git" in transcript and "Traceback" not in transcript
    assert "cruft has been updated" in transcript

    assert (package / "my_rewards.py").read_text() == MY_REWARD
    assert (project / "configs/local.yaml").read_text() == local
    assert "## Quick start (my notes)" in readme.read_text()  # merged, not overwritten
    assert 'name="code"' in (package / "task.py").read_text()
    assert "def code_correctness" in (package / "rewards.py").read_text()
    assert (project / "data/sample_code.jsonl").is_file()
    assert not (project / "data/sample_math.jsonl").exists()
    record = json.loads((project / ".cruft.json").read_text())
    assert record["context"]["cookiecutter"]["task_type"] == "code"
    check = (
        "from grpo_kit.recipe import parse_recipe\n"
        "from grpo_kit.training import reward_functions\n"
        "r = parse_recipe(['--use_cpu', 'true'])\n"
        "print(r.training.max_steps, *[f.__name__ for f in reward_functions(r)])\n"
    )
    result = run_in(project, sys.executable, "-c", check)
    assert_ok(result)
    assert result.stdout.split() == ["7", "code_correctness", "brevity"]
    tests = run_in(project, sys.executable, "-m", "pytest", "-q", "tests/test_rewards.py")
    assert_ok(tests)


@pytest.mark.slow
def test_cruft_update_to_and_from_the_tools_task(tmp_path):
    """The agent task's files (its task, rewards, corpus) come with it and go with it."""
    project = cruft_created(tmp_path)
    package = project / "src/my_grpo_project"
    for task in ("tools", "math"):
        variables = json.dumps({"task_type": task})
        update = ["update", "--skip-apply-ask", "--variables-to-update", variables]
        assert_ok(cruft(project, *update))
        assert f'name="{task}"' in (package / "task.py").read_text(), task
        assert (project / "data/sample_corpus.jsonl").is_file() == (task == "tools")
        commit_all(project, f"to {task}")
    check = "from my_grpo_project.task import TASK; print(TASK.name)"
    result = run_in(project, sys.executable, "-c", check)
    assert_ok(result)
    assert result.stdout.split() == ["math"]


@pytest.mark.slow
def test_a_kit_only_fix_reaches_a_project_as_its_pin_alone(tmp_path, venv):
    """The template ships a fix inside grpo-kit (a release: a version bump, a change to its
    code, a changelog entry, no starter touched): `cruft update` changes the project's grpo-kit
    pin and nothing else, the user's edits to their rewards, their task and configs/local.yaml
    are all still there, and `make install` (the kit from the template's folder) installs
    exactly the new kit."""
    from grpo_template import release

    project = cruft_created(tmp_path)
    template = Path(json.loads((project / ".cruft.json").read_text())["template"])
    version = release.version(template)
    package = project / "src/my_grpo_project"
    mine = {
        package / "rewards.py": "\n\n# my reward tweak\n",
        package / "task.py": "\n\n# my prompt tweak\n",
    }
    for path, addition in mine.items():
        path.write_text(path.read_text() + addition)
    (project / "configs/local.yaml").write_text(MY_OVERRIDES)
    commit_all(project, "my changes")
    before = {p: p.read_text() for p in project.rglob("*") if p.is_file() and ".git" not in p.parts}

    bumped = release_kit(template, "\n# a fix inside the kit\n")

    assert_ok(cruft(project, "update", "--skip-apply-ask"))
    after = {p: p.read_text() for p in project.rglob("*") if p.is_file() and ".git" not in p.parts}
    changed = sorted(str(p.relative_to(project)) for p in after if after[p] != before.get(p))
    # The README names the pinned kit (its manual is that version's): only the version moves.
    assert changed == [".cruft.json", "README.md", "pyproject.toml"], changed
    diff = subprocess.run(["git", "diff", "HEAD", "-U0", "pyproject.toml"], cwd=project,
                          capture_output=True, text=True).stdout  # fmt: skip
    edits = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in "+++---"]
    assert edits == [f'-    "grpo-kit=={version}",', f'+    "grpo-kit=={bumped}",'], edits
    readme = subprocess.run(["git", "diff", "HEAD", "-U0", "README.md"], cwd=project,
                            capture_output=True, text=True).stdout  # fmt: skip
    lines = [line for line in readme.splitlines() if line[:1] in "+-" and line[:3] not in "+++---"]
    removed = [line[1:] for line in lines if line.startswith("-")]
    added = [line[1:] for line in lines if line.startswith("+")]
    assert removed and [line.replace(version, bumped) for line in removed] == added, lines
    for path, addition in mine.items():
        assert path.read_text().endswith(addition)
    assert (project / "configs/local.yaml").read_text() == MY_OVERRIDES
    assert make_install(project, venv) == (bumped, release.ledger(template)[bumped])


@pytest.mark.slow
def test_a_kit_release_reaches_a_project_from_its_git_tag_and_from_an_index(
    tmp_path, venv, monkeypatch
):
    """A project generated from the template's repository (a URL) installs the kit by its
    release tag. Across the next release, `cruft update` moves the pin and the tag in KIT, and
    `make install` installs exactly the new kit, from the tag and, with KIT empty, from a
    package index that holds both releases' wheels."""
    from grpo_template import release

    template = template_repository(tmp_path)
    version = release.version(template)
    git(template, "tag", f"v{version}")  # this tree as the release it names
    # The repository at a URL, offline: git (cruft's clones, pip's) reads it from the folder.
    url = "https://example.invalid/org/grpo-template.git"
    config = tmp_path / "gitconfig"
    config.write_text(f'[url "{template.as_uri()}"]\n\tinsteadOf = {url}\n')
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    out = tmp_path / "projects"
    out.mkdir()
    assert_ok(cruft(out, "create", url, "--no-input"))
    project = out / "my-grpo-project"
    assert_started(project)
    makefile = (project / "Makefile").read_text()
    assert f"\nKIT ?= git+{url}@v{version}\\#subdirectory=kit\n" in makefile  # make's \# is #

    bumped = release_kit(template, "\n# a fix inside the kit, released\n")
    assert_ok(cruft(project, "update", "--skip-apply-ask"))
    diff = subprocess.run(["git", "diff", "HEAD", "-U0", "Makefile", "pyproject.toml"],
                          cwd=project, capture_output=True, text=True).stdout  # fmt: skip
    edits = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in "+++---"]
    assert edits == [
        f"-KIT ?= git+{url}@v{version}\\#subdirectory=kit",
        f"+KIT ?= git+{url}@v{bumped}\\#subdirectory=kit",
        f'-    "grpo-kit=={version}",',
        f'+    "grpo-kit=={bumped}",',
    ], edits
    new_kit = release.ledger(template)[bumped]
    assert make_install(project, venv) == (bumped, new_kit)

    # An index with both releases (PEP 503: <index>/<name>/index.html, served from a folder).
    wheels = tmp_path / "simple" / "grpo-kit"
    for ref in (f"v{version}", f"v{bumped}"):
        build = [str(venv), "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels),
                 f"git+{url}@{ref}#subdirectory=kit"]  # fmt: skip
        assert_ok(subprocess.run(build, capture_output=True, text=True, timeout=600,
                                 env={**os.environ, **INSTALL_ENV}))  # fmt: skip
    names = sorted(wheel.name for wheel in wheels.glob("grpo_kit-*.whl"))
    assert len(names) == 2, names
    links = "".join(f'<a href="{name}">{name}</a>\n' for name in names)  # PEP 503's page
    (wheels / "index.html").write_text(f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n")
    index = {"KIT": "", "PIP_INDEX_URL": (tmp_path / "simple").as_uri()}
    assert make_install(project, venv, deps=True, **index) == (bumped, new_kit)


def test_where_a_project_was_generated_from():
    """`.cruft.json`'s template, commit and directory: a local repository (at its root or in a
    folder of it), cookiecutter's remote abbreviations expanded as git clones them, and none
    outside git."""
    from grpo_template import kit

    assert kit.remote_url("gh:org/grpo-template") == "https://github.com/org/grpo-template.git"
    assert kit.remote_url("git+https://x.org/t.git") == "https://x.org/t.git"
    assert kit.remote_url("/a/local/folder") is None
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()  # fmt: skip
    if head:  # this checkout is a git repository
        assert kit.origin(str(ROOT), ROOT) == kit.Origin(str(ROOT), head, None)
        assert kit.origin("gh:org/t", ROOT).template == "https://github.com/org/t.git"
        assert kit.origin(".", ROOT / "grpo_template").directory == "grpo_template"


def test_outside_git_no_cruft_record_and_the_way_to_link(tmp_path):
    """A template folder that is not a git repository cannot be updated from: no .cruft.json,
    and the generation says how to link the project later."""
    from grpo_template import kit

    folder = tmp_path / "not-git"
    folder.mkdir()
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    found = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True,
                           env=env)  # fmt: skip
    assert found.returncode != 0
    os.environ["GIT_CEILING_DIRECTORIES"] = str(tmp_path)
    try:
        assert kit.origin(str(folder), folder) is None
    finally:
        del os.environ["GIT_CEILING_DIRECTORIES"]


@pytest.mark.slow
def test_the_readme_commands_give_a_project_cruft_updates(tmp_path):
    """`cookiecutter <template> --no-input` writes the .cruft.json `cruft create` writes for the
    same template (cruft's own record is the reference), and `cruft update` then switches the
    project's task."""
    template = template_repository(tmp_path)
    project = cookiecutter_generated(tmp_path, template)
    record = json.loads((project / ".cruft.json").read_text())
    by_cruft = tmp_path / "by-cruft"
    by_cruft.mkdir()
    assert_ok(cruft(by_cruft, "create", str(template), "--no-input"))
    assert record == json.loads((by_cruft / "my-grpo-project" / ".cruft.json").read_text())

    variables = '{"task_type": "code"}'
    update = cruft(project, "update", "--variables-to-update", variables, "--skip-apply-ask")
    assert_ok(update)
    assert "Good work!" in update.stdout and "Traceback" not in update.stderr
    package = project / "src/my_grpo_project"
    assert 'name="code"' in (package / "task.py").read_text()
    assert "def code_correctness" in (package / "rewards.py").read_text()
    assert (project / "data/sample_code.jsonl").is_file()
    assert not (project / "data/sample_math.jsonl").exists()
    assert (
        json.loads((project / ".cruft.json").read_text())["context"]["cookiecutter"]["task_type"]
        == "code"
    )
    assert "UU " not in status(project) and not list(project.rglob("*.rej"))


MY_LINE = "# my change to the math rewards"
MY_ROW = '{"question": "What is 2 + 2?", "answer": "#### 4"}\n'


@pytest.mark.slow
def test_a_task_switch_leaves_conflict_markers_in_an_edited_rewards_file(tmp_path):
    """rewards.py has the same name in every task: an edit to it meets the new task's file in
    cruft's three-way merge, and git leaves conflict markers around the user's line, says so,
    and lists the file as unmerged until the user resolves it."""
    project = cruft_created(tmp_path)
    rewards = project / "src/my_grpo_project/rewards.py"
    rewards.write_text(rewards.read_text() + f"\n\n{MY_LINE}\n")
    commit_all(project, "my change")

    transcript = interactive_update(project, '{"task_type": "code"}', answers=("y",))
    assert "Applied patch to 'src/my_grpo_project/rewards.py' with conflicts." in transcript
    text = rewards.read_text()
    assert MY_LINE in text  # not dropped
    assert "<<<<<<< " in text and "=======" in text and ">>>>>>> " in text  # not silent
    assert "def code_correctness" in text  # the new task's rewards, for the user to merge
    assert "UU src/my_grpo_project/rewards.py" in status(project)
    assert 'name="code"' in (project / "src/my_grpo_project/task.py").read_text()


@pytest.mark.slow
def test_a_task_switch_keeps_an_edited_file_the_new_task_lacks_and_names_it(tmp_path):
    """The old task's sample data is not in the new task: edited, it is kept, and git names it
    ("patch does not apply"); the three-way merge then gives way to `git apply --reject`, so an
    edited rewards.py keeps the user's version with a rewards.py.rej beside it. Nothing the user
    wrote is dropped, and every kept file is named."""
    project = cruft_created(tmp_path)
    data = project / "data/sample_math.jsonl"
    data.write_text(data.read_text() + MY_ROW)
    rewards = project / "src/my_grpo_project/rewards.py"
    rewards.write_text(rewards.read_text() + f"\n\n{MY_LINE}\n")
    commit_all(project, "my changes")

    transcript = interactive_update(project, '{"task_type": "code"}', answers=("y",))
    assert data.read_text().endswith(MY_ROW)  # kept ...
    assert "data/sample_math.jsonl: patch does not apply" in transcript  # ... and named
    assert MY_LINE in rewards.read_text()
    rejected = project / "src/my_grpo_project/rewards.py.rej"
    assert rejected.is_file() and "def code_correctness" in rejected.read_text()
    assert "*.rej files" in transcript
    assert "?? src/my_grpo_project/rewards.py.rej" in status(project)
    assert (project / "data/sample_code.jsonl").is_file()  # the new task's files still arrive


@pytest.mark.slow
def test_the_message_prints_once_and_never_from_crufts_own_renders(tmp_path):
    """`cruft create` prints the next steps once, for the project kept; `cruft update` renders
    the template twice into temporary folders for its diff: no "Created /tmp/..." from them, and
    no repository started there (a .git in a render would enter the diff)."""
    template = template_repository(tmp_path)
    out = tmp_path / "projects"
    out.mkdir()
    created = cruft(out, "create", str(template), "--no-input")
    assert_ok(created)
    project = out / "my-grpo-project"
    assert created.stdout.count("Next:") == 1, created.stdout
    assert f"Created {project}\n" in created.stdout
    assert "first commit made" in created.stdout
    assert_started(project)

    update = cruft(project, "update", "--variables-to-update", '{"task_type": "code"}', "-y")
    assert_ok(update)
    said = update.stdout + update.stderr
    assert "Created " not in said and "Next:" not in said and "git:" not in said, said
    assert "Good work!" in update.stdout
    assert ".git/" not in status(project) and not (project / "src/.git").exists()
    assert 'name="code"' in (project / "src/my_grpo_project/task.py").read_text()


def make_update(project: Path, variables: str, answers: tuple[str, ...] = ()):
    """The README's update path, `make update VARS=...`, in a pseudo-terminal (cruft asks "Apply
    diff and update?"; each of `answers` answers it in turn); returns (exit status, output)."""
    import pexpect

    env = {**user_env(), "GIT_PAGER": "cat", "PAGER": "cat", "TERM": "dumb",
           "PYTHONPATH": str(ROOT / "kit" / "src")}  # fmt: skip
    command = ["update", f"VARS={variables}", f"PYTHON={sys.executable}",
               f"CRUFT={sys.executable} -m cruft"]  # fmt: skip
    child = pexpect.spawn("make", command, cwd=str(project), env=env, encoding="utf-8",
                          timeout=600)  # fmt: skip
    output = []
    for answer in answers:
        child.expect("Apply diff and update")
        output.append(child.before)
        child.sendline(answer)
    child.expect(pexpect.EOF)
    output.append(child.before)
    child.close()
    return child.exitstatus, "".join(output)


def snapshot(project: Path) -> dict:
    return {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_make_update_refuses_a_project_without_git_and_its_fix_then_merges(tmp_path):
    """The issue's project: made by the two commands without a repository (here: the opt-out),
    rewards.py edited. `make update` to another task refuses with the fix in one line and leaves
    every file as it was: no half-applied task (task.py math, rewards.py classification). The
    fix, followed as printed, makes a repository whose first commit already holds the edit: the
    update still merges three ways (grpo update-base stored the generated base first), so the
    edit is kept beside the new task's rewards with conflict markers, no `.rej` file."""
    template = template_repository(tmp_path)
    out = tmp_path / "generated"
    command = [sys.executable, "-m", "cookiecutter", str(template), "--no-input", "-o", str(out)]
    made = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={**user_env(), "GRPO_NO_GIT": "1"})  # fmt: skip
    assert_ok(made)
    project = out / "my-grpo-project"
    assert not (project / ".git").exists() and "GRPO_NO_GIT is set" in made.stdout
    rewards = project / "src/my_grpo_project/rewards.py"
    rewards.write_text(rewards.read_text() + f"\n\n{MY_LINE}\n")
    before = snapshot(project)

    code, output = make_update(project, '{"task_type": "classification"}')
    assert code != 0
    refusal = [line for line in output.splitlines() if line.startswith("update: refused")]
    assert len(refusal) == 1 and "git init && git add -A && git commit" in refusal[0], output
    assert snapshot(project) == before
    assert "Apply diff" not in output and "Traceback" not in output

    fix = refusal[0].split("first: ", 1)[1]
    assert fix == "git init && git add -A && git commit -m 'before update'", fix
    git(project, "init", "-q")
    commit_all(project, "before update")
    code, output = make_update(project, '{"task_type": "classification"}', answers=("y",))
    assert code != 0, output  # grpo check names the file left to merge
    text = rewards.read_text()
    assert MY_LINE in text and "def label_correctness" in text and "<<<<<<< " in text
    assert not list(project.rglob("*.rej")), output
    assert 'name="classification"' in (project / "src/my_grpo_project/task.py").read_text()
    assert "check: src/my_grpo_project/rewards.py: merge conflicts left by the update" in output
    assert "Traceback" not in output


@pytest.mark.slow
def test_make_update_keeps_an_edited_rewards_file_and_never_leaves_a_mixed_task_unsaid(tmp_path):
    """The same edit in a project generated as documented (a git repository from the start):
    uncommitted, `make update` refuses; committed, the update runs, the user's line is kept in
    rewards.py beside the new task's rewards, and `grpo check` names the file left to merge
    (make fails): the mixed state is never reported as a success."""
    template = template_repository(tmp_path)
    project = cookiecutter_generated(tmp_path, template)
    rewards = project / "src/my_grpo_project/rewards.py"
    rewards.write_text(rewards.read_text() + f"\n\n{MY_LINE}\n")
    before = snapshot(project)
    code, output = make_update(project, '{"task_type": "classification"}')
    assert code != 0 and "update: refused, nothing changed: uncommitted changes" in output
    assert snapshot(project) == before
    commit_all(project, "my change")

    code, output = make_update(project, '{"task_type": "classification"}', answers=("y",))
    assert code != 0, output
    text = rewards.read_text()
    assert MY_LINE in text and "def label_correctness" in text  # the edit kept, the new task's
    assert 'name="classification"' in (project / "src/my_grpo_project/task.py").read_text()
    assert "check: src/my_grpo_project/rewards.py: merge conflicts left by the update" in output
    assert "Traceback" not in output

    # Resolved as the check says: the user's line and the new task's rewards; then it agrees.
    resolved = [line for line in text.splitlines() if not line.startswith(("<<<<<<<", "=======",
                                                                           ">>>>>>>"))]  # fmt: skip
    rewards.write_text("\n".join(resolved) + "\n")
    git(project, "add", "-A")
    check = run_in(project, sys.executable, "-m", "grpo_kit", "check",
                   env={"PYTHONPATH": str(ROOT / "kit" / "src")})  # fmt: skip
    assert_ok(check)
    assert "agrees with itself (the classification task)" in check.stdout


@pytest.mark.slow
def test_make_update_refuses_when_an_edited_file_would_be_dropped(tmp_path):
    """The walk's mixed task (issue 41): rewards.py edited and a row added to the old task's
    own sample data, committed; the update drops that file, git cannot apply the removal, and
    cruft's fallback (`git apply --reject`) half-applied the whole update (task.py of the new
    task, rewards.py of the old with a .rej). `make update` now refuses before cruft runs,
    naming the file and the fix, nothing changed; done as it says, the update merges."""
    template = template_repository(tmp_path)
    project = cookiecutter_generated(tmp_path, template)
    data = project / "data/sample_math.jsonl"
    data.write_text(data.read_text() + MY_ROW)
    rewards = project / "src/my_grpo_project/rewards.py"
    rewards.write_text(rewards.read_text() + f"\n\n{MY_LINE}\n")
    commit_all(project, "my changes")
    before = snapshot(project)

    code, output = make_update(project, '{"task_type": "classification"}')
    assert code != 0 and "Apply diff" not in output and "Traceback" not in output
    refusal = [line for line in output.splitlines() if line.startswith("update: refused")]
    assert len(refusal) == 1, output
    assert "data/sample_math.jsonl: edited, and the update drops it" in refusal[0]
    assert "git mv data/sample_math.jsonl data/my_sample_math.jsonl" in refusal[0]
    assert snapshot(project) == before

    git(project, "mv", "data/sample_math.jsonl", "data/my_sample_math.jsonl")
    commit_all(project, "my rows under my own name")
    code, output = make_update(project, '{"task_type": "classification"}', answers=("y",))
    assert not list(project.rglob("*.rej")), output
    assert MY_LINE in rewards.read_text() and "def label_correctness" in rewards.read_text()
    assert 'name="classification"' in (project / "src/my_grpo_project/task.py").read_text()
    assert (project / "data/my_sample_math.jsonl").read_text().endswith(MY_ROW)
    assert "Traceback" not in output
