"""Benchmarks of a generated project on grpo-kit (figures, not tests): one command, one table.

    python benchmarks/run.py [--runs 5] [--learn-steps 60] [--skip-matrix] [--with-tests]

1. Wall time of the generated project's `train` on the tiny recipe against the floor (a bare
   TRL script doing the same work: load model and data, `GRPOTrainer(...).train()`) and against
   `trl grpo --config` on an equivalent recipe: same steps, same process count, runs alternated,
   medians and ratios.
2. Steps and wall time to reach a mean reward of 0.9 on the learning test's toy task (start the
   completion with a token of a fixed 1/16 of the vocabulary), generated pipeline vs bare TRL.
3. Reward throughput per task and the code sandbox's programs/s (`reward_throughput.py`).
4. Time to bake every valid answer combination (and, with `--with-tests`, to run the template's
   whole test suite).

It prints the machine it ran on; the README quotes the latest table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

PACKAGE = "bench_project"
ENV = {
    **os.environ,
    "HF_HUB_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "PYTHONUNBUFFERED": "1",
}

# The bare floor: what any GRPO script must do, with the generated run's exact settings.
BARE = r"""
import json, sys
from datasets import Dataset
from peft import LoraConfig
from transformers import AutoTokenizer
from trl import GRPOConfig, GRPOTrainer

spec = json.load(open(sys.argv[1]))
recipe = spec["recipe"]
tokenizer = AutoTokenizer.from_pretrained(recipe["model_name_or_path"])
tokenizer.padding_side = "left"
rows = Dataset.from_list([json.loads(line) for line in open(spec["data"])])
sys.path.insert(0, "src")
import importlib
funcs = [getattr(importlib.import_module(m), f) for m, f in
         (name.rsplit(".", 1) for name in spec["rewards"])]
fields = GRPOConfig.__dataclass_fields__
args = GRPOConfig(**{k: v for k, v in recipe.items() if k in fields and k not in spec["skip"]})
peft = None
if recipe.get("use_peft"):
    peft = LoraConfig(r=recipe["lora_r"], lora_alpha=recipe["lora_alpha"],
                      lora_dropout=recipe["lora_dropout"],
                      target_modules=recipe["lora_target_modules"], task_type="CAUSAL_LM")
trainer = GRPOTrainer(model=recipe["model_name_or_path"], reward_funcs=funcs, args=args,
                      train_dataset=rows, processing_class=tokenizer, peft_config=peft)
trainer.train()
print(json.dumps(trainer.state.log_history))  # the callers pick reward, step_time, ...
"""

# GRPOConfig fields the generated run resolved that a fresh config must not be given verbatim.
SKIP = {
    "output_dir", "logging_dir", "report_to", "push_to_hub_token", "hub_token",
    "_n_gpu", "local_rank", "distributed_state", "deepspeed_plugin", "accelerator_config",
    "fsdp_config", "fsdp_plugin_args", "parallelism_config", "world_size", "process_index",
    "generation_batch_size",  # derived from steps_per_generation; setting both raises
}  # fmt: skip


def timed(command: list[str], cwd: Path, env=None) -> tuple[float, str]:
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env or ENV, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{result.stderr[-3000:]}")
    return elapsed, result.stdout


def bake(folder: Path, **answers) -> Path:
    """Bake a project quietly (the hook's "Next:" lines would mix into the table)."""
    context = {"project_slug": PACKAGE.replace("_", "-"), "package_name": PACKAGE, **answers}
    pairs = [f"{key}={value}" for key, value in context.items()]
    command = [sys.executable, "-m", "cookiecutter", str(ROOT), "--no-input", "-o", str(folder)]
    timed([*command, *pairs], ROOT)
    return folder / context["project_slug"]


def prepared_data(project: Path, out: Path) -> Path:
    """The sample data as the generated run trains on it (chat prompts + columns) in JSONL."""
    script = (
        "import json, sys\n"
        "from grpo_kit import data, heldout\n"
        "from grpo_kit.recipe import parse_recipe\n"
        "r = parse_recipe(['--config', 'configs/grpo.yaml', '--smoke'])\n"
        "task = r.project.task\n"
        "rows = heldout.training_rows(r.script, r.task, task)\n"
        "rows = data.to_conversations(rows, r.script, r.task, task)\n"
        "with open(sys.argv[1], 'w') as f:\n"
        "    for row in rows: f.write(json.dumps(row) + '\\n')\n"
    )
    env = {**ENV, "PYTHONPATH": str(project / "src")}
    timed([sys.executable, "-c", script, str(out)], project, env)
    return out


def generated_train(project: Path, output: Path, extra: list[str]) -> list[str]:
    """The project's own train script (its train.py on grpo-kit), as `make train` runs it."""
    return [
        sys.executable, "-m", f"{PACKAGE}.train", "--config", "configs/grpo.yaml", "--smoke",
        "--output_dir", str(output), "--no-resume", *extra,
    ]  # fmt: skip


def bare_spec(project: Path, run_dir: Path, data: Path, out: Path) -> Path:
    record = json.loads((run_dir / "run_record.json").read_text())
    recipe = record["recipe"]
    names = recipe["reward_funcs"]
    rewards = [n if "." in n else reward_path(project, n, recipe) for n in names]
    spec = {"recipe": {**recipe, "output_dir": str(out.parent / "bare-out")}, "data": str(data),
            "rewards": rewards, "skip": sorted(SKIP - {"output_dir"})}  # fmt: skip
    spec["recipe"]["report_to"] = "none"
    path = out
    path.write_text(json.dumps(spec, default=str))
    return path


BOUND = "bench_rewards"  # a module of the benchmark project: the task's rewards, settings bound


def reward_path(project: Path, reward: str, recipe: dict) -> str:
    """A dotted path that bare TRL (and `trl grpo`) can call for one of the task's rewards: the
    project's reward with the recipe settings it takes bound (grpo_kit.rewards.bind), written into
    the project as `bench_rewards.py`."""
    module = project / "src" / PACKAGE / f"{BOUND}.py"
    if not module.is_file():
        module.write_text(
            "from grpo_kit.project import load\n"
            "from grpo_kit.rewards import bind\n\n"
            f"_settings = {{'max_completion_length': {recipe['max_completion_length']}}}\n"
            "globals().update({name: bind(func, _settings) for name, func in "
            "load().task.reward_table.items()})\n"
        )
    return f"{PACKAGE}.{BOUND}.{reward}"


def trl_cli_recipe(project: Path, run_dir: Path, data: Path, folder: Path) -> Path:
    """`trl grpo --config` recipe equivalent to the generated run (rewards by dotted path)."""
    import yaml

    record = json.loads((run_dir / "run_record.json").read_text())
    recipe = record["recipe"]
    dataset = folder / "trl-data"
    dataset.mkdir(exist_ok=True)
    shutil.copy(data, dataset / "train.jsonl")
    keys = ("model_name_or_path", "use_peft", "lora_r", "lora_alpha", "lora_dropout",
            "lora_target_modules", "dtype", "learning_rate", "max_steps",
            "per_device_train_batch_size", "gradient_accumulation_steps", "num_generations",
            "max_completion_length", "beta", "use_cpu", "bf16", "logging_steps", "seed",
            "optim", "warmup_steps", "reward_weights", "save_strategy")  # fmt: skip
    values = {k: recipe[k] for k in keys if k in recipe}
    rewards = [reward_path(project, n, recipe) for n in recipe["reward_funcs"]]
    values.update(dataset_name=str(dataset), reward_funcs=rewards, report_to="none",
                  output_dir=str(folder / "trl-out"))  # fmt: skip
    path = folder / "trl_recipe.yaml"
    path.write_text(yaml.safe_dump(values))
    return path


def median_ratio(times: dict[str, list[float]], name: str) -> str:
    return f"{statistics.median(times[name]) / statistics.median(times['bare TRL script']):.2f}x"


def speed(project: Path, folder: Path, runs: int) -> list[tuple[str, str, str]]:
    env = {**ENV, "PYTHONPATH": str(project / "src"), "OMP_NUM_THREADS": "2"}
    warm = folder / "warm"
    timed(generated_train(project, warm, []), project, env)  # builds the tiny model, warms caches
    data = prepared_data(project, folder / "data.jsonl")
    spec = bare_spec(project, warm, data, folder / "bare.json")
    cli = trl_cli_recipe(project, warm, data, folder)
    commands = {
        "generated train": generated_train(project, folder / "gen", []),
        "bare TRL script": [sys.executable, "-c", BARE, str(spec)],
        "trl grpo --config": [sys.executable, "-m", "trl.cli", "grpo", "--config", str(cli)],
    }
    if shutil.which("trl"):
        commands["trl grpo --config"] = ["trl", "grpo", "--config", str(cli)]
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():  # alternated, so drift hits all alike
            times[name].append(timed(command, project, env)[0])
    rows = []
    for name in commands:
        median = statistics.median(times[name])
        rows.append((f"train, 2 LoRA steps on the tiny model: {name}", f"{median:.2f} s median "
                     f"of {runs}", median_ratio(times, name)))  # fmt: skip
    return rows


# The learning test's toy task (kit/tests/test_learning.py): start the completion with a token of
# a fixed 1/16 of the vocabulary. Written into the benchmark project as a module of its own.
TOY_REWARD = f"{PACKAGE}.toy_reward.starts_with_a_target_token"
TOY_MODULE = """def starts_with_a_target_token(completions, completion_ids, **kwargs):
    return [1.0 if ids and ids[0] % 16 == 0 else 0.0 for ids in completion_ids]
"""
LEARN = ["--reward_funcs", TOY_REWARD, "--reward_weights", "1.0",
         "--num_generations", "8", "--per_device_train_batch_size", "16",
         "--max_completion_length", "8", "--lr_scheduler_type", "constant", "--warmup_steps",
         "0", "--beta", "0.0", "--logging_steps", "1", "--use_peft", "false",
         "--learning_rate", "1e-2"]  # fmt: skip


def steps_to(rewards: list[float], target: float = 0.9, window: int = 5) -> int | None:
    for end in range(window, len(rewards) + 1):
        if sum(rewards[end - window : end]) / window >= target:
            return end
    return None


def learning(project: Path, folder: Path, steps: int) -> list[tuple[str, str, str]]:
    env = {**ENV, "PYTHONPATH": f"{project / 'src'}:{project}", "OMP_NUM_THREADS": "2"}
    (project / "src" / PACKAGE / "toy_reward.py").write_text(TOY_MODULE)
    extra = [*LEARN, "--max_steps", str(steps)]
    run_dir = folder / "learn-gen"
    elapsed, _ = timed(generated_train(project, run_dir, extra), project, env)
    state = json.loads((run_dir / "trainer_state.json").read_text())
    generated = [r["reward"] for r in state["log_history"] if "reward" in r]
    data = prepared_data(project, folder / "learn-data.jsonl")
    spec = json.loads(bare_spec(project, run_dir, data, folder / "learn.json").read_text())
    spec["rewards"] = [TOY_REWARD]
    (folder / "learn.json").write_text(json.dumps(spec, default=str))
    bare_elapsed, out = timed([sys.executable, "-c", BARE, str(folder / "learn.json")], project,
                              env)  # fmt: skip
    bare = [row["reward"] for row in json.loads(out.strip().splitlines()[-1]) if "reward" in row]
    rows = []
    for name, rewards, seconds in (("generated train", generated, elapsed),
                                   ("bare TRL script", bare, bare_elapsed)):  # fmt: skip
        reached = steps_to(rewards)
        what = f"step {reached}" if reached else f"not within {steps} steps"
        rows.append((f"toy task to mean reward 0.9 (5-step window): {name}",
                     f"{what}; {rewards[0]:.2f} -> {rewards[-1]:.2f}",
                     f"{seconds:.1f} s for {steps} steps"))  # fmt: skip
    return rows


def throughput() -> list[tuple[str, str, str]]:
    from reward_throughput import measure_all, sandbox_rows

    rows = []
    with quiet_stdout():
        figures = measure_all(seconds=2.0)
    for task, result in figures.items():
        rows.append((f"reward throughput, {task}: {result['reward']}",
                     f"{result['completions_per_s']:.0f} completions/s", ""))  # fmt: skip
        if "plain_loop_per_s" in result:  # the code sandbox beside a plain `python -I` loop
            rows += [(f"code programs: {what}", f"{value} programs/s", ratio)
                     for what, value, ratio in sandbox_rows(result)]  # fmt: skip
    return rows


@contextlib.contextmanager
def quiet_stdout():
    """Silence file descriptor 1 (the generation hooks print their "Next:" lines there)."""
    sys.stdout.flush()
    saved = os.dup(1)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 1)
        try:
            yield
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)


def matrix(with_tests: bool) -> list[tuple[str, str, str]]:
    from cookiecutter.main import cookiecutter
    from matrix import VALID  # tests/matrix.py

    with tempfile.TemporaryDirectory() as folder, quiet_stdout():
        start = time.perf_counter()
        for number, combo in enumerate(VALID):
            cookiecutter(str(ROOT), no_input=True, extra_context=combo,
                         output_dir=str(Path(folder) / str(number)))  # fmt: skip
        baked = time.perf_counter() - start
    rows = [(f"bake every valid combination ({len(VALID)})", f"{baked:.0f} s",
             f"{baked / len(VALID) * 1000:.0f} ms each")]  # fmt: skip
    if with_tests:
        elapsed, _ = timed([sys.executable, "-m", "pytest", "-q"], ROOT)
        rows.append(("the template's whole test suite (make test, 2 workers)", f"{elapsed / 60:.1f}"
                     " min", ""))  # fmt: skip
    return rows


def machine() -> str:
    import torch

    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}, torch {torch.__version__}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="alternated runs per command")
    parser.add_argument("--learn-steps", type=int, default=60)
    parser.add_argument("--skip-matrix", action="store_true", help="skip the bake timing")
    parser.add_argument("--with-tests", action="store_true", help="also time the test suite")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        project = bake(folder / "projects", gpu_tier="cpu", model="Qwen/Qwen2.5-0.5B-Instruct")
        print("measuring train wall time ...", file=sys.stderr)
        rows += speed(project, folder, args.runs)
        print("measuring learning speed ...", file=sys.stderr)
        rows += learning(project, folder, args.learn_steps)
    print("measuring reward throughput ...", file=sys.stderr)
    rows += throughput()
    if not args.skip_matrix:
        print("timing the bake matrix ...", file=sys.stderr)
        rows += matrix(args.with_tests)
    print("| benchmark | result | ratio / note |\n| --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"\nMachine: {machine()}; `python benchmarks/run.py --runs {args.runs}`.")


if __name__ == "__main__":
    main()
