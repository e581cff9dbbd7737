"""The Unsloth backend in its own environment: unsloth 2026.10.9 caps trl, transformers and
datasets below the Transformers backend's pins, so its projects install into a separate virtual
environment (`.venvs/unsloth`, built once by an Unsloth project's own `make install` plus every
task's extra packages, under a file lock so that parallel workers share it, and reused while the
pins are unchanged; the tests only read it). The environment sees the packages installed here
(`--system-site-packages`, as the user journey's does): pip installs into it what the Unsloth
stack pins differently (unsloth, trl, transformers, datasets, triton, ...) and reuses the rest
(torch, numpy, pyarrow, ...) instead of unpacking them again (half the install's time). There,
on CPU:

* the pins hold, `import unsloth` works and `pip check` passes (`make install` replaces the CUDA
  torchvision pip takes from PyPI by its CPU build, or removes it and says so where PyTorch's
  CPU index does not answer);
* every Unsloth recipe the template can bake parses with an Unsloth project's parser;
* a project per task passes its own tests of its task and rewards on this stack (`make
  test-fast`); the default project passes its whole `make test` (its smoke test included:
  train, merge, infer) and `make smoke` (its recipe, smoke-overridden);
* the kit's own Unsloth tests (kit/tests/test_unsloth.py: the backend's checks and the smoke
  pipeline of each task and of each LoRA layout an Unsloth project can have, in one process:
  importing unsloth once instead of once per project) pass on this stack.

The environment installs grpo-kit from this checkout (`make install`'s KIT); every session
reinstalls it editable (without dependencies), so the kit under test is the working tree's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, assert_ok, bake_ok, run_in
from matrix import VALID

from grpo_template import recipe, stack, tasks
from grpo_template.answers import Answers
from grpo_template.derived import TORCHVISION_REMOVED, post_install, recipe_header

pytestmark = pytest.mark.slow

VENV = ROOT / ".venvs" / "unsloth"
# The template's default model (Qwen3.5) is refused for Unsloth (answers.py says why): Unsloth
# projects that would take the default name this one instead.
UNSLOTH_MODEL = "Qwen/Qwen2.5-1.5B-Instruct"
STAMP = VENV / "grpo-template-stack.json"
INSTALL_LOG = VENV / "make-install.log"  # what the Unsloth project's `make install` printed
TASKS = ("math", "code", "json", "classification", "custom")
# Every task: the default one on the default tier, the others on the cpu tier. On the CPU, a GPU
# tier's project runs the same smoke layer over its recipe, and every GPU tier's recipe is parsed
# into the Unsloth stack below (test_unsloth_recipes_load_into_the_unsloth_stack), so one stands
# for the rest.
# Qwen2.5-1.5B's JSON plan does not fit the cpu tier (its fp32 weights, activations and TRL's
# log-prob tiles): the family's 0.5B does.
# Nor its code plan: it would fit only with max_completion_length halved (192), below the code
# task's floor (256: its own ideal completions would be punished), so the plan refuses it.
CPU_MODELS = {"json": "Qwen/Qwen2.5-0.5B-Instruct", "code": "Qwen/Qwen2.5-0.5B-Instruct"}
PROJECTS = {"math-24GB": {"task_type": "math", "gpu_tier": "24GB"}} | {
    f"{task}-cpu": {"task_type": task, "gpu_tier": "cpu"}
    | ({"model": CPU_MODELS[task]} if task in CPU_MODELS else {})
    for task in TASKS
    if task != "math"
}


def venv_env() -> dict:
    # PIP_COMPILE=false: pip would compile every module it installs (about 7,400 for this stack,
    # ~27 s of CPU); Python compiles the ~700 the tests import, on first import.
    path = f"{VENV / 'bin'}:{os.environ['PATH']}"
    return {"PATH": path, "VIRTUAL_ENV": str(VENV), "PIP_COMPILE": "false"}


def make(project: Path, *targets: str, extra=()):
    python = str(VENV / "bin" / "python")
    command = ["make", *targets, f"PYTHON={python}", *extra]
    return run_in(project, *command, timeout=1800, env=venv_env())


def fresh_venv() -> None:
    shutil.rmtree(VENV, ignore_errors=True)
    command = [sys.executable, "-m", "venv", "--system-site-packages", str(VENV)]
    subprocess.run(command, check=True)


def task_extras() -> list[str]:
    # The tasks an Unsloth project can have (tools is refused with this backend).
    return sorted({r for name in TASKS for r in tasks.TASKS[name].extra_dependencies})


@pytest.fixture(scope="session")
def unsloth_python(cookies_session) -> str:
    """The Unsloth environment: an Unsloth project's `make install`, then every task's extras."""
    from filelock import FileLock

    python = str(VENV / "bin" / "python")
    # Rebuilt when a pin or the install's own lines change.
    wanted = json.dumps(
        [*stack.dependencies("unsloth", "none"), *task_extras(), post_install("unsloth")]
    )
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(VENV) + ".lock"):
        if STAMP.is_file() and STAMP.read_text() == wanted:
            return python
        project = bake_ok(cookies_session, backend="unsloth", gpu_tier="cpu", project_slug="u-env",
                          model=UNSLOTH_MODEL)  # fmt: skip
        fresh_venv()
        install = make(project, "install")
        assert_ok(install)
        INSTALL_LOG.write_text(install.stdout + install.stderr)
        if task_extras():
            extras = run_in(project, python, "-m", "pip", "install", *task_extras(),
                            env=venv_env(), timeout=900)  # fmt: skip
            assert_ok(extras)
        STAMP.write_text(wanted)
    kit = [python, "-m", "pip", "install", "-q", "--no-deps", "-e", str(ROOT / "kit")]
    assert_ok(subprocess.run(kit, capture_output=True, text=True, timeout=600))
    return python


CHECK_PINS = """
import json, sys
from importlib import metadata
from packaging.requirements import Requirement
import unsloth  # fails if torchvision (PyPI's CUDA build) is still installed
bad = []
for line in json.loads(sys.argv[1]):
    req = Requirement(line)
    if not req.specifier.contains(metadata.version(req.name), prereleases=True):
        bad.append(f"{req.name} {metadata.version(req.name)} not in {req.specifier}")
print(json.dumps(bad))
"""


def test_unsloth_environment_holds_the_pins(unsloth_python):
    pins = json.dumps(stack.UNSLOTH_STACK)
    result = subprocess.run(
        [unsloth_python, "-c", CHECK_PINS, pins], capture_output=True, text=True, timeout=600
    )
    assert_ok(result)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def test_pip_check_passes_after_the_unsloth_projects_make_install(unsloth_python):
    """unsloth requires torchvision: `make install` leaves its CPU build (pip check clean). Only
    where PyTorch's CPU index did not answer does it remove torchvision instead, saying so, and
    then pip check names that requirement alone."""
    check = subprocess.run([unsloth_python, "-m", "pip", "check"], capture_output=True,
                           text=True, timeout=300, env={**os.environ, **venv_env()})  # fmt: skip
    log = INSTALL_LOG.read_text()
    if TORCHVISION_REMOVED in log:
        problems = check.stdout.strip().splitlines()
        assert len(problems) == 1 and "requires torchvision" in problems[0], check.stdout
        pytest.skip("PyTorch's CPU index did not answer here: make install removed torchvision")
    assert check.returncode == 0, check.stdout + check.stderr
    loads = [unsloth_python, "-c", "import torchvision, unsloth; print(torchvision.__version__)"]
    assert_ok(subprocess.run(loads, capture_output=True, text=True, timeout=600,
                             env={**os.environ, **venv_env()}))  # fmt: skip


def _wheel(folder: Path, name: str, version: str, code: str, requires: tuple[str, ...] = ()):
    """A minimal wheel of one module (`name/__init__.py` holding `code`)."""
    import zipfile

    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": code,
        f"{info}/METADATA": "Metadata-Version: 2.1\n"
        + f"Name: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{path},,\n" for path in [*files, f"{info}/RECORD"])
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            archive.writestr(member, text)
    return path


@pytest.mark.parametrize("cpu_build", [True, False], ids=["cpu-build-served", "index-without-it"])
def test_the_install_line_swaps_a_torchvision_that_does_not_load(tmp_path, cpu_build):
    """`make install`'s torchvision line (derived.post_install), run on stand-ins: a package
    that requires torchvision, a torchvision that fails to import (as PyPI's CUDA build does
    beside a CPU torch), and an index that serves (or lacks) its CPU build. Served: the CPU
    build replaces it and pip check passes; lacking: it is removed, and the install says so."""
    wheels, index = tmp_path / "wheels", tmp_path / "index"
    wheels.mkdir()
    broken = "raise RuntimeError('operator torchvision::nms does not exist')\n"
    needs = _wheel(wheels, "needs_torchvision", "1.0", "", requires=("torchvision",))
    cuda = _wheel(wheels, "torchvision", "0.28.0", broken)
    (index / "torchvision").mkdir(parents=True)
    if cpu_build:
        served = _wheel(index / "torchvision", "torchvision", "0.28.0+cpu", "__version__ = 1\n")
        link = f'<a href="{served.name}">{served.name}</a>'
        (index / "torchvision" / "index.html").write_text(f"<html><body>{link}</body></html>")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env |= {"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    setup = [python, "-m", "pip", "install", "-q", "--no-index", str(needs), str(cuda)]
    assert_ok(subprocess.run(setup, capture_output=True, text=True, env=env, timeout=300))
    makefile = tmp_path / "Makefile"
    makefile.write_text(
        f"PYTHON = {python}\nTORCH_CPU_INDEX := {index.as_uri()}\nTORCH_INDEX ?= auto\n"
        f"install:\n\t{post_install('unsloth')}\n"
    )
    install = subprocess.run(["make", "-f", str(makefile), "install"], capture_output=True,
                             text=True, env=env, timeout=300)  # fmt: skip
    assert_ok(install)
    check = subprocess.run([python, "-m", "pip", "check"], capture_output=True, text=True,
                           env=env, timeout=300)  # fmt: skip
    version = subprocess.run([python, "-m", "pip", "list", "--format", "json"], env=env,
                             capture_output=True, text=True).stdout  # fmt: skip
    installed = {p["name"]: p["version"] for p in json.loads(version)}
    if cpu_build:
        assert installed["torchvision"] == "0.28.0+cpu"
        assert check.returncode == 0, check.stdout
        assert TORCHVISION_REMOVED not in install.stdout
    else:
        assert "torchvision" not in installed
        assert TORCHVISION_REMOVED in install.stdout and "pip check will say" in install.stdout
        assert "make install TORCH_INDEX=" in install.stdout  # what to do about it (issue 41)
        assert "requires torchvision" in check.stdout


PARSE_ALL = """
import json, os, sys
from grpo_kit.recipe import parse_recipe
failures = []
for project, paths in json.loads(sys.argv[1]).items():
    os.chdir(project)  # each task's project: its own task and dataclasses
    sys.path.insert(0, os.path.join(project, "src"))
    for path in paths:
        try:
            recipe = parse_recipe(["--config", path, "--use_cpu", "true"])
            assert recipe.backend.max_lora_rank >= recipe.model.lora_r
        except BaseException as err:  # SystemExit included: report every failing recipe
            failures.append(f"{path}: {type(err).__name__}: {err}")
print(json.dumps(failures))
"""


def test_unsloth_recipes_load_into_the_unsloth_stack(unsloth_python, cookies_session, tmp_path):
    """Every Unsloth recipe the template can bake (every task, model and single-GPU tier)
    parses with the installed trl 1.15 / transformers 5.17 and its task's project's own
    dataclasses (in one process: importing unsloth takes seconds)."""
    recipes = {}
    for task in TASKS:
        project = bake_ok(cookies_session, backend="unsloth", task_type=task,
                          project_slug=f"u-parse-{task}", model=UNSLOTH_MODEL)  # fmt: skip
        combos = [c for c in VALID if c["backend"] == "unsloth" and c["task_type"] == task]
        paths = []
        for number, combo in enumerate(combos):
            answers = Answers.from_context(combo)
            path = tmp_path / f"recipe-{task}-{number}.yaml"
            header = recipe_header(answers)
            path.write_text(recipe.render(answers.plan, answers.tracker, header, answers.algorithm))
            paths.append(str(path))
        assert len(paths) >= 10, task
        recipes[str(project)] = paths
    command = (unsloth_python, "-c", PARSE_ALL, json.dumps(recipes))
    result = run_in(tmp_path, *command, env={**venv_env(), "PYTHONPATH": ""}, timeout=900)
    assert_ok(result)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


@pytest.mark.parametrize("variant", list(PROJECTS))
def test_unsloth_project_passes_make_test_and_make_smoke(unsloth_python, cookies, variant):
    """The default project: `make test` (its own smoke test: grpo smoke's pipeline, train,
    merge with its check, infer, under pytest) and `make smoke` itself. The other tasks'
    projects: their tests of their task and rewards (`make test-fast`); their smoke pipelines
    run in the kit's Unsloth tests (test_the_kits_unsloth_tests_pass_on_the_unsloth_stack), all
    in one process. (The code task's Unsloth merge is a known divergence there.)"""
    project = bake_ok(cookies, backend="unsloth", **{"model": UNSLOTH_MODEL, **PROJECTS[variant]})
    assert 'backend = "unsloth"' in (project / "pyproject.toml").read_text()
    default = variant == "math-24GB"
    assert_ok(make(project, "test" if default else "test-fast", extra=["ARGS=-p no:cacheprovider"]))
    if not default:
        return
    result = make(project, "smoke")
    assert_ok(result)
    assert "merge check passed" in result.stdout
    merged = project / "outputs" / "smoke" / "merged"
    assert (merged / "config.json").is_file()
    assert result.stdout.split("### completion", 1)[1].strip()


RESOLVE = """
import dataclasses, json, os, re, sys
unsloth_side = sys.argv[1] == "unsloth"
fields = json.loads(sys.argv[3])
if unsloth_side:
    # Unsloth rewrites TRL's GRPOConfig/GRPOTrainer only on a GPU; UNSLOTH_ALLOW_CPU=1 takes its
    # GPU import path on this CPU, and PatchFastRL then generates the same patched classes
    # (into UNSLOTH_COMPILE_LOCATION) that a GPU run trains with.
    os.environ["UNSLOTH_ALLOW_CPU"] = "1"
    import unsloth
    from unsloth import FastLanguageModel, PatchFastRL
    os.environ["UNSLOTH_ALLOW_CPU"] = "0"
    PatchFastRL("GRPO", FastLanguageModel)
from grpo_kit.recipe import parse_recipe
resolved, patched = {{}}, []
for path in sys.argv[4:]:
    args = parse_recipe(["--config", path, "--use_cpu", "true", "--bf16", "false"]).training
    patched.append(bool(getattr(type(args), "_unsloth_patched_rl_config", False)))
    resolved[os.path.basename(path)] = {{f: getattr(args, f, "MISSING") for f in fields}}
assignments = {{}}
if unsloth_side:
    import trl.trainer.grpo_trainer as pristine
    pattern = re.compile(r"^\\s*(?:self|args|self\\.args)\\.(%s)\\s*=(?!=).*$" % "|".join(fields))
    sources = {{"trl": pristine.__file__,
               "unsloth": os.path.join(sys.argv[2], "UnslothGRPOTrainer.py")}}
    for name, source in sources.items():
        with open(source, encoding="utf-8") as handle:
            assignments[name] = sorted(l.strip() for l in handle if pattern.match(l))
print(json.dumps({{"resolved": resolved, "patched": patched, "assignments": assignments}}))
"""


def _resolve(python, project, side, paths, cache, env=None):
    from grpo_template import algorithms

    fields = [*algorithms.PARITY_FIELDS, "epsilon_low"]
    script = RESOLVE.format(pkg=project.name.replace("-", "_"))
    result = run_in(project, python, "-c", script, side, str(cache), json.dumps(fields),
                    *map(str, paths), env={**(env or {}), "UNSLOTH_COMPILE_LOCATION": str(cache)},
                    timeout=900)  # fmt: skip
    assert_ok(result)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_every_algorithm_resolves_to_the_same_configuration_on_both_backends(
    unsloth_python, cookies_session, tmp_path
):
    """Each algorithm's recipe, rendered for each backend (the 24GB tier: vLLM on both, so the
    rollout correction is live), parsed by each backend's own project and stack: TRL 1.16, and
    Unsloth's patched GRPOConfig (trl 1.15) after its __init__ rewrites. Every algorithm field
    (written, or left at a default both share) resolves to the same value, which is the
    preset's; Unsloth's generated trainer sets those fields exactly as TRL's own does. Control:
    the recipes as they were before the presets (loss_type only) resolve differently."""
    from grpo_template import algorithms

    def answers(backend, name):
        return Answers.from_context({
            "project_name": "p", "project_slug": "p", "package_name": "p", "custom_model_id": "n/a",
            "custom_model_params_b": "0", "model": UNSLOTH_MODEL, "task_type": "math",
            "gpu_tier": "24GB", "tracker": "none", "backend": backend, "algorithm": name,
        })  # fmt: skip

    projects = {
        "transformers": bake_ok(cookies_session, project_slug="parity-trl", model=UNSLOTH_MODEL),
        "unsloth": bake_ok(
            cookies_session, backend="unsloth", project_slug="parity-unsloth", model=UNSLOTH_MODEL
        ),
    }
    paths = {backend: [] for backend in projects}
    for backend in projects:
        plan = answers(backend, "dapo").plan
        assert plan.use_vllm or plan.fast_inference  # the rollout correction is in play
        for name in algorithms.ALGORITHMS:
            a = answers(backend, name)
            text = recipe.render(a.plan, a.tracker, recipe_header(a), name)
            path = tmp_path / backend / f"{name}.yaml"
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
            paths[backend].append(path)
            if name in ("dapo", "dr_grpo"):  # the control: only loss_type, as before
                bare = tmp_path / backend / f"bare-{name}.yaml"
                written = set(algorithms.FIELDS) - {"loss_type"}
                bare.write_text("".join(line + "\n" for line in text.splitlines()
                                        if line.split(":")[0] not in written))  # fmt: skip
                paths[backend].append(bare)
    trl_side = _resolve(sys.executable, projects["transformers"], "trl", paths["transformers"],
                        tmp_path / "unused")  # fmt: skip
    unsloth_side = _resolve(unsloth_python, projects["unsloth"], "unsloth", paths["unsloth"],
                            tmp_path / "compiled", env=venv_env())  # fmt: skip
    assert all(unsloth_side["patched"]) and not any(trl_side["patched"])
    for name in algorithms.ALGORITHMS:
        here, there = trl_side["resolved"][f"{name}.yaml"], unsloth_side["resolved"][f"{name}.yaml"]
        differ = {f: (here[f], there[f]) for f in here if here[f] != there[f]}
        assert differ == {}, name
        for key, value in algorithms.get(name).values().items():
            assert here[key] == value, (name, key)
    for name, field in (("dapo", "epsilon_high"), ("dr_grpo", "scale_rewards")):
        here = trl_side["resolved"][f"bare-{name}.yaml"]
        there = unsloth_side["resolved"][f"bare-{name}.yaml"]
        assert here[field] != there[field], (name, field)
    trainer = unsloth_side["assignments"]
    assert trainer["unsloth"] == trainer["trl"] and trainer["trl"]


def test_the_kits_unsloth_tests_pass_on_the_unsloth_stack(unsloth_python):
    """grpo-kit's own tests of its Unsloth backend, run in the Unsloth environment: its unit
    tests, the smoke pipeline of every task an Unsloth project can have and of every LoRA layout
    (multimodal regex, fused projections, Llama, LFM2's convolutions) and the learning proof's
    Unsloth case (all skipped where unsloth is not installed)."""
    tests = ROOT / "kit" / "tests"
    command = [unsloth_python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "unsloth",
               str(tests / "test_unsloth.py"), str(tests / "test_learning.py")]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=1800,
                            env={**os.environ, **venv_env()}, cwd=ROOT / "kit")  # fmt: skip
    assert_ok(result)
    assert " passed" in result.stdout and " skipped" not in result.stdout
