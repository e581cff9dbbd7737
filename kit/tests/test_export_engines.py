"""`grpo export` checked by the engines' own code, in each engine's own pinned environment:

* `engines/verl` in the kit's cache (`~/.cache/grpo-kit`): verl 0.9.1 as its wheel pins it
  (transformers <5.11, so not this suite's environment), with the CPU torch;
* `engines/openrlhf`: OpenRLHF 0.11.2 `--no-deps` plus its light dependencies as pinned
  (transformers 5.15.0, ray 2.55.0, DeepSpeed 0.19.6 without its CUDA ops; flash-attn and vLLM do
  not build without CUDA and are stubbed by engine_checks.py);

both with only the reward path of grpo-kit (this checkout's kit/src on the path, without its
dependencies: the training stack's pins do not fit the engines') and the packages the reward file
names when they are missing (export.REWARD_DEPENDENCIES; trl for soft_overlong where the engine
does not compute it itself). Each environment is built once per machine under a file lock and
reused while its requirements are unchanged (a stamp); the tests skip, saying why, when the
package registry cannot be reached. One process per engine runs engine_checks.py over every
task's export (math, code, json, classification and a user's own local file, the custom task):

* verl: the launch file's overrides composed by Hydra over verl's own ppo_trainer.yaml and
  passed through its validate_config (vLLM's LoRA-rank query is the one check stubbed); both
  parquet files through create_rl_dataset (RLHFDataset); the reward through
  get_custom_reward_fn and the reward manager the launch names (DAPO's, for soft_overlong),
  its run_single on the completion's token ids;
* OpenRLHF: the launch file's flags through train_ppo_ray's own argparse and checks (stopped
  where it starts Ray); both files through blending_datasets + PromptDataset; the reward
  through SingleTurnAgentExecutor's reward function; the LoRA targets applied by its Actor to
  the project's tiny model (grpo_kit.offline.tiny_model);

and the scores equal `grpo reward-debug`'s (its `score`) on ideal, wrong and garbage
completions; a long completion checks the length reward on the engine's token count (verl) or
on reward-debug's characters / 4 (OpenRLHF, which passes text only).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import RECIPE, VERIFIED_TASKS, chdir, load
from grpo_kit.commands import export
from test_export import ROWS, SINGLE_TURN, WRONG

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]  # the template's checkout (kit/tests/..)
# Built once per machine (every clone and CI run of this machine reuses them; a stamp rebuilds one
# when its requirements change), beside the kit's other per-machine cache.
VENVS = Path(
    os.environ.get(
        "GRPO_ENGINE_VENVS",
        Path(os.environ.get("GRPO_KIT_CACHE", Path.home() / ".cache" / "grpo-kit")) / "engines",
    )
)
KIT_SRC = Path(export.__file__).resolve().parents[2]
CHECKS = Path(__file__).with_name("engine_checks.py")
REWARD_PATH = [*export.REWARD_DEPENDENCIES.values(), "pyyaml>=6", "rich>=13", "filelock>=3.12",
               *(req for _, req in export.TASK_REWARD_DEPENDENCIES.values())]  # fmt: skip
TRL = export.LENGTH_DEPENDENCIES["soft_overlong"][1]
# Each environment: the pip commands that build it (in order), its stamp.
BUILDS = {
    "verl": [["torch==2.13.0", "verl==0.9.1", *REWARD_PATH]],
    "openrlhf": [
        ["torch==2.13.0", "transformers==5.15.0", "accelerate", "datasets", "peft", "ray==2.55.0",
         "aiohttp", "jsonlines", "einops", "loralib", "optree>=0.15.0", "torchdata",
         "torchmetrics", "tqdm", "pylatexenc", "sympy", "tensorboard", "isort", *REWARD_PATH,
         TRL, "wheel", "setuptools", "ninja", "py-cpuinfo", "pydantic", "psutil", "hjson",
         "msgpack"],
        ["--no-build-isolation", "deepspeed==0.19.6"],  # DS_BUILD_OPS=0: no CUDA ops
        ["--no-deps", "openrlhf==0.11.2"],
    ],
}  # fmt: skip
OFFLINE = ("No matching distribution", "Could not find a version", "Failed to establish",
           "Network is unreachable", "Temporary failure in name resolution")  # fmt: skip
LONG_FILLER = "step " * 200  # a completion inside or past soft_overlong's buffer
GARBAGE = '}{ \\boxed{ <answer></think> ``` {"a": ] \x00 ☃ </answer> <think>'
MAX_COMPLETION = 1024  # soft_overlong's buffer: the last 256 tokens


def engine_python(engine: str) -> Path:
    """The engine environment's python, built once per machine (file lock, stamp)."""
    from filelock import FileLock

    venv = VENVS / engine
    stamp = venv / "grpo-export-stamp.json"
    wanted = json.dumps(BUILDS[engine], sort_keys=True)
    VENVS.mkdir(parents=True, exist_ok=True)
    with FileLock(str(VENVS / f"{engine}.lock")):
        if stamp.is_file() and stamp.read_text() == wanted:
            return venv / "bin" / "python"
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        env = {**os.environ, "PIP_COMPILE": "false", "DS_BUILD_OPS": "0"}
        log = venv / "build.log"
        for step in BUILDS[engine]:
            command = [str(venv / "bin" / "pip"), "install", "-q", *step]
            done = subprocess.run(command, env=env, capture_output=True, text=True)
            log.write_text(log.read_text() + done.stdout + done.stderr if log.exists()
                           else done.stdout + done.stderr)  # fmt: skip
            if done.returncode:
                if any(sign in done.stderr for sign in OFFLINE):
                    pytest.skip(f"{engine}'s environment: the package registry cannot be "
                                f"reached ({done.stderr.strip().splitlines()[-1]})")  # fmt: skip
                raise AssertionError(f"building {venv} failed: see {log}")
        stamp.write_text(wanted)
    return venv / "bin" / "python"


def expected_scores(root: Path, completions: list) -> tuple[list[float], list[float]]:
    """(`grpo reward-debug`'s weighted score, its soft_overlong part) of each completion on the
    first training rows (the rows exported), as reward-debug scores them
    (`reward_debug.score`)."""
    from grpo_kit.commands.reward_debug import score
    from grpo_kit.recipe import parse_recipe

    with chdir(root):
        recipe = parse_recipe(["--config", RECIPE, *overrides(root)], read_only=True)
        from grpo_kit import data, heldout

        task = recipe.project.task
        rows = heldout.training_rows(recipe.script, recipe.task, task)
        rows = data.to_conversations(rows, recipe.script, recipe.task, task)
        results = score(recipe, rows, list(enumerate(completions)))
        weights = export._weights(recipe)
    totals = [sum(weights[r.name] * (r.values[i] or 0.0) for r in results)
              for i in range(len(completions))]  # fmt: skip
    length = next((r.values for r in results if r.name == "soft_overlong"), None)
    parts = (
        [weights.get("soft_overlong", 0.0) * (v or 0.0) for v in length]
        if length
        else [0.0] * len(completions)
    )
    return totals, parts


def overrides(root: Path) -> list[str]:
    return ["--dataset_name", load(root).task.data.sample, "--max_train_samples", str(ROWS),
            "--max_steps", str(ROWS), "--max_completion_length", str(MAX_COMPLETION)]  # fmt: skip


# The cases: every single-turn task on the kit's default tiny model (Qwen2), and the math task
# on a tiny Qwen3.5 (a vision-language checkpoint with linear-attention layers: OpenRLHF's LoRA
# target list must name its language model's layers).
CASES = {task: (task, {}) for task in SINGLE_TURN} | {
    "math-qwen3_5": ("math", {"tiny_arch": "qwen3_5", "chat_template": "qwen3_5_think"})
}


@pytest.fixture(scope="module")
def case_for(projects, tmp_path_factory):
    """`case_for(name, engine)`: the case's project, tiny model, export and completions."""
    from conftest import make_project
    from grpo_kit.offline.tiny_model import project_tiny_model
    from test_export import ideal_completions

    made: dict = {}

    def get(name: str, engine: str) -> dict:
        if name not in made:
            task, options = CASES[name]
            base = tmp_path_factory.mktemp(f"engines-{name}")
            root = make_project(base / "project", task, **options) if options else projects(task)
            with chdir(root):
                model = project_tiny_model(base / "model", load(root))
            ideal = ideal_completions(root)[:ROWS]
            completions = {
                "ideal": ideal,
                "wrong": [WRONG] * ROWS,
                "garbage": [GARBAGE] * ROWS,
                "long": [LONG_FILLER + text for text in ideal],
            }
            made[name] = {"root": root, "model": model, "completions": completions,
                          "cwd": base, "outs": {}}  # fmt: skip
        case = made[name]
        if engine not in case["outs"]:
            argv = ["--engine", engine, "--config", RECIPE, "--output-dir",
                    str(case["cwd"] / engine), "--model_name_or_path", str(case["model"]),
                    *overrides(case["root"])]  # fmt: skip
            with chdir(case["root"]):
                case["outs"][engine] = export.export(argv)
        return case

    return get


def engine_report(engine: str, cases: dict) -> dict:
    """engine_checks.py's report on every case, in one process of the engine's environment."""
    python = engine_python(engine)
    spec = [{"name": name, "out": str(c["outs"][engine]), "model": str(c["model"]),
             "cwd": str(c["cwd"]), "completions": c["completions"]}
            for name, c in cases.items()]  # fmt: skip
    path = next(iter(cases.values()))["cwd"] / f"{engine}-cases.json"
    path.write_text(json.dumps(spec))
    env = {**os.environ, "PYTHONPATH": str(KIT_SRC), "HF_HUB_OFFLINE": "1",
           "RAY_USAGE_STATS_ENABLED": "0", "TOKENIZERS_PARALLELISM": "false"}  # fmt: skip
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.run([str(python), str(CHECKS), engine, str(path)], env=env,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULTS ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-6000:]
    return json.loads(lines[-1].removeprefix("RESULTS "))


def trl_overlong(tokens: int, weight: float) -> float:
    """TRL's soft overlong punishment on a token count, weighted (what training adds)."""
    from trl.rewards import get_soft_overlong_punishment

    punish = get_soft_overlong_punishment(MAX_COMPLETION, max(1, MAX_COMPLETION // 4))
    return weight * punish([range(tokens)])[0]


def test_verl_runs_the_export_with_its_own_config_data_and_reward_path(case_for):
    cases = {name: case_for(name, "verl") for name in CASES}
    reports = engine_report("verl", cases)
    for name, case in cases.items():
        check_verl(case, reports[name])


def check_verl(case: dict, report: dict) -> None:
    out = case["outs"]["verl"]
    # main_ppo reads the reward file under reward.custom_reward_function; validate_config passed
    # (vLLM's LoRA-rank query stubbed: it got the recipe's rank).
    config = report["config"]
    assert config["reward_path"] == str(out / export.REWARD_FILE) and config["custom_reward_fn"]
    assert config["test_freq"] > 0
    assert report["lora_ranks_for_vllm"] == [8]
    weights = export._weights(load_recipe(case["root"]))
    assert config["reward_manager"] == ("dapo" if "soft_overlong" in weights else "naive")
    # RLHFDataset: every row, the chat prompt kept as training builds it.
    assert report["datasets"]["train"]["rows"] == ROWS
    assert report["datasets"]["test"]["rows"] >= 1
    assert report["datasets"]["train"]["raw_prompt"][-1]["role"] == "user"
    for kind, completions in case["completions"].items():
        totals, length = expected_scores(case["root"], completions)
        got = report["scores"][kind]
        for i, result in enumerate(got):
            if kind == "long":  # verl's DAPO manager: TRL's punishment on its token count
                base = totals[i] - length[i]
                if result["tokens"] > MAX_COMPLETION:  # longer than a rollout can be: penalised
                    assert result["score"] < base or "soft_overlong" not in weights
                    continue
                want = base + trl_overlong(result["tokens"], weights.get("soft_overlong", 0.0))
            else:  # reward-debug's score exactly (soft_overlong 0 in both)
                assert length[i] == 0.0 and result["tokens"] <= MAX_COMPLETION * 3 // 4
                want = totals[i]
            assert result["score"] == pytest.approx(want), (case["cwd"].name, kind, i, result)
    if load(case["root"]).task.name in VERIFIED_TASKS:  # a judge's is a server's opinion: no
        # server here, its rows are None (0) for both, as in reward-debug (scores checked above)
        ideal = [r["score"] for r in report["scores"]["ideal"]]
        assert ideal != [r["score"] for r in report["scores"]["wrong"]]


def test_openrlhf_runs_the_export_with_its_own_argparse_data_reward_and_lora(case_for):
    cases = {name: case_for(name, "openrlhf") for name in CASES}
    reports = engine_report("openrlhf", cases)
    for name, case in cases.items():
        check_openrlhf(case, reports[name])


def check_openrlhf(case: dict, report: dict) -> None:
    args = report["args"]
    assert args["remote_url"] == [str(case["outs"]["openrlhf"] / export.REWARD_FILE)]
    assert args["eval_steps"] > 0
    # No --data.max_samples: the held-out file is read whole.
    held_out = (case["outs"]["openrlhf"] / "test.jsonl").read_text().splitlines()
    assert report["datasets"]["test"]["rows"] == len(held_out)
    assert report["datasets"]["train"]["rows"] == ROWS
    # The LoRA targets reach PEFT as module names, and every one adapts a layer.
    assert args["target_modules"] and report["lora_adapted"] == sorted(args["target_modules"])
    assert report["lora_in_towers"] == []  # never a vision tower's layer
    # The reward file counts the completion's tokens (re-encoded with the model's tokenizer,
    # eos included): TRL's punishment on that count; reward-debug's score exactly below it.
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(case["model"])
    weight = export._weights(load_recipe(case["root"])).get("soft_overlong", 0.0)
    for kind, completions in case["completions"].items():
        totals, length = expected_scores(case["root"], completions)
        got = [r["score"] for r in report["scores"][kind]]
        tokens = [len(tokenizer(c + tokenizer.eos_token, add_special_tokens=False)["input_ids"])
                  for c in completions]  # fmt: skip
        if kind == "long":
            want = [
                t - n + trl_overlong(k, weight)
                for t, n, k in zip(totals, length, tokens, strict=True)
            ]
        else:
            assert all(
                n == 0.0 and k <= MAX_COMPLETION * 3 // 4
                for n, k in zip(length, tokens, strict=True)
            )
            want = totals
        assert got == pytest.approx(want), (case["cwd"].name, kind, tokens)
        assert all(0.0 <= r["correct"] <= 1.0 for r in report["scores"][kind])


def load_recipe(root: Path):
    from grpo_kit.recipe import parse_recipe

    with chdir(root):
        return parse_recipe(["--config", RECIPE, *overrides(root)], read_only=True)
