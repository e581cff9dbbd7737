"""Reward throughput per task, and programs per second of the code sandbox (figures, not tests).

    python benchmarks/reward_throughput.py [--seconds 3]

Bakes one project per task into a temporary folder, then, inside each, scores the sample data's
ideal completions with the task's correctness reward for a few seconds and prints completions/s;
for the code task it also runs the sandbox with 1 and 2 workers and prints programs/s. Prints a
markdown table and the machine it ran on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grpo_template.tasks import TASKS  # noqa: E402

MEASURE = r"""
import json, sys, time
from {pkg} import data, rewards
from {pkg}.config import parse_recipe
from {pkg}.project import SAMPLE_DATA
from {pkg}.rewards.base import call_like_trl
from {pkg}.tasks import TASK

seconds = float(sys.argv[1])
recipe = parse_recipe(["--config", "configs/grpo.yaml", "--use_cpu", "true",
                       "--dataset_name", SAMPLE_DATA])
TASK.configure(recipe.task)
rows = data.to_conversations(data.load_training_rows(recipe.script, recipe.task),
                             recipe.script, recipe.task)
batch = [rows[i % len(rows)] for i in range(16)]
texts = [TASK.ideal_completion(row) for row in batch]
name = recipe.script.reward_funcs[0]
func = rewards.REGISTRY[name]
done, start = 0, time.perf_counter()
while time.perf_counter() - start < seconds:
    call_like_trl(func, texts, batch)
    done += len(texts)
result = {{"reward": name, "completions_per_s": done / (time.perf_counter() - start)}}
if recipe.script.reward_funcs[0] == "code_correctness":
    from {pkg} import sandbox
    jobs = [(row["solution"] if "solution" in row else row["code"], json.loads(row["answer"]),
             row.get("setup") or "") for row in batch]
    for workers in (1, 2):
        limits = sandbox.Limits(workers=workers)
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            sandbox.run_many(jobs, limits)
            done += len(jobs)
        result[f"programs_per_s_{{workers}}"] = done / (time.perf_counter() - start)
print(json.dumps(result))
"""


def bake(task: str, out: Path) -> Path:
    slug = f"bench-{task}"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "cookiecutter",
            str(ROOT),
            "--no-input",
            "-o",
            str(out),
            f"task_type={task}",
            f"project_slug={slug}",
        ],
        check=True,
        capture_output=True,
    )
    return out / slug


def measure(project: Path, seconds: float) -> dict:
    package = project.name.replace("-", "_")
    env = {**os.environ, "PYTHONPATH": str(project / "src"), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", MEASURE.format(pkg=package), str(seconds)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def measure_all(seconds: float) -> dict[str, dict]:
    """{task: figures} for every task (each baked into a temporary folder)."""
    with tempfile.TemporaryDirectory() as tmp:
        return {task: measure(bake(task, Path(tmp)), seconds) for task in TASKS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="measuring time per figure")
    args = parser.parse_args()
    rows = list(measure_all(args.seconds).items())
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores, Python "
        f"{platform.python_version()}; ideal completions of the sample data, batches of 16.\n"
    )
    print(
        "| task | correctness reward | completions/s | sandbox programs/s (1 worker) "
        "| (2 workers) |"
    )
    print("| --- | --- | ---: | ---: | ---: |")
    for task, f in rows:
        one = f"{f['programs_per_s_1']:.0f}" if "programs_per_s_1" in f else "-"
        two = f"{f['programs_per_s_2']:.0f}" if "programs_per_s_2" in f else "-"
        print(f"| {task} | `{f['reward']}` | {f['completions_per_s']:.0f} | {one} | {two} |")


if __name__ == "__main__":
    main()
