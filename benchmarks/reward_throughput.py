"""Reward throughput per task, and programs per second of the code sandbox (figures, not tests).

    python benchmarks/reward_throughput.py [--seconds 3]

Bakes one project per task into a temporary folder, then, inside each, scores the sample data's
ideal completions with the task's correctness reward for a few seconds and prints completions/s.
For the code task it also runs the same reference programs and tests, in the same run, through
the sandbox with 1 and 2 workers and through the plain baseline: a serial loop of
`subprocess.run([python, "-I", "-c", setup + program + tests])` with no isolation at all.
Prints a markdown table and the machine it ran on.
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
import json, subprocess, sys, time
from grpo_kit import data, rewards
from grpo_kit.project import load
from grpo_kit.recipe import parse_recipe
from grpo_kit.rewards import call_like_trl

seconds = float(sys.argv[1])
TASK = load().task
SAMPLE_DATA = TASK.data.sample
recipe = parse_recipe(["--config", "configs/grpo.yaml", "--use_cpu", "true",
                       "--dataset_name", SAMPLE_DATA])
rows = data.to_conversations(data.load_training_rows(recipe.script, recipe.task, TASK),
                             recipe.script, recipe.task, TASK)
batch = [rows[i % len(rows)] for i in range(16)]
texts = [TASK.ideal_completion(row, recipe.task) for row in batch]
name = recipe.script.reward_funcs[0]
func = rewards.resolve([name], TASK.reward_table, recipe.reward_settings())[0]
call_like_trl(func, texts, batch)  # warm up (the code sandbox starts its workers)
done, start = 0, time.perf_counter()
while time.perf_counter() - start < seconds:
    call_like_trl(func, texts, batch)
    done += len(texts)
result = {{"reward": name, "completions_per_s": done / (time.perf_counter() - start)}}
if name == "code_correctness":
    from grpo_kit import sandbox
    raw = [json.loads(line) for line in open(SAMPLE_DATA)]
    jobs = [(r["code"], r["test_list"], r["test_setup_code"]) for r in raw]
    for workers in (1, 2):
        limits = sandbox.Limits(workers=workers)
        sandbox.run_many(jobs, limits)  # warm up
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            runs = sandbox.run_many(jobs, limits)
            assert all(run.fraction == 1.0 for run in runs), runs
            done += len(jobs)
        result[f"programs_per_s_{{workers}}"] = done / (time.perf_counter() - start)
        result["isolation"] = limits.describe()["isolation"]
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for program, tests, setup in jobs:
            source = setup + "\n" + program + "\n" + "\n".join(tests)
            subprocess.run([sys.executable, "-I", "-c", source], check=True, capture_output=True)
            done += 1
    result["plain_loop_per_s"] = done / (time.perf_counter() - start)
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
    print("| task | correctness reward | completions/s |\n| --- | --- | ---: |")
    for task, f in rows:
        print(f"| {task} | `{f['reward']}` | {f['completions_per_s']:.0f} |")
    for task, f in rows:
        if "plain_loop_per_s" in f:
            print(f"\n{task} sandbox ({f['isolation']}), same programs and tests, one run:\n")
            print(sandbox_table(f))


def sandbox_rows(figures: dict) -> list[tuple[str, str, str]]:
    """(what, programs/s, vs the plain loop) for the code sandbox and its baseline."""
    plain = figures["plain_loop_per_s"]
    rows = [("plain serial `python -I -c` loop (no isolation)", f"{plain:.1f}", "1.00x")]
    for workers in (1, 2):
        value = figures[f"programs_per_s_{workers}"]
        what = f"sandbox ({figures['isolation']}), {workers} worker{'s' if workers > 1 else ''}"
        rows.append((what, f"{value:.1f}", f"{value / plain:.2f}x"))
    return rows


def sandbox_table(figures: dict) -> str:
    lines = ["| code programs | programs/s | vs plain loop |", "| --- | ---: | ---: |"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in sandbox_rows(figures)]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
