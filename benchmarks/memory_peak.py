"""The cpu tier's memory plan against a real run (figures, not tests): peak RSS of a few GRPO
steps of SmolLM2-135M-Instruct through a generated project's own `train`.

    python benchmarks/memory_peak.py [--task math] [--steps 2] [--per-device-batch N] [--threads 2]

It bakes a project for HuggingFaceTB/SmolLM2-135M-Instruct on the cpu tier (the catalog's entry,
the task's shipped sample data), points configs/local.yaml at the offline build of the model
(`grpo real-model`, grpo_kit/offline/real_model.py; nothing from the Hub), runs `grpo train` for
`--steps` steps with the generated recipe (`--per-device-batch` overrides its micro-batch, the
accumulation keeping the group: the earlier default was 4) and reads the process's peak RSS
(getrusage). It prints the plan's estimate twice, at the recipe's shape (the longest prompt the
recipe keeps, `max_prompt_tokens`) and at the run's (the longest prompt of the data), beside the
measured peak, and the seconds per step. One run at a time: the machine's memory is the point.
Two steps took about half an hour on the shared 2-core machine (load 8-12).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run as bench  # noqa: E402  (bake, ENV, machine)

from grpo_template import catalog, memory, tasks, tiers, tuning  # noqa: E402

HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
OUTPUT_DIR = "outputs/memory-peak"

# Runs `grpo train` in this process and writes its peak RSS (bytes) where argv[1] says.
TRAIN = r"""
import atexit, resource, runpy, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write(
    str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)))
sys.argv = ["grpo_kit", "train", *sys.argv[2:]]
runpy.run_module("grpo_kit", run_name="__main__")
"""

# The longest prompt of the training rows, in tokens, as the run renders it.
PROMPTS = r"""
import json
from transformers import AutoTokenizer
from grpo_kit import data
from grpo_kit.recipe import parse_recipe
r = parse_recipe(["--config", "configs/grpo.yaml"], read_only=True)
task = r.project.task
rows = data.load_training_rows(r.script, r.task, task)
rows = data.to_conversations(rows, r.script, r.task, task)
tok = AutoTokenizer.from_pretrained(r.model.model_name_or_path)
kwargs = r.training.chat_template_kwargs or {}
lengths = [len(tok.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=True,
                                       return_dict=False, **kwargs)) for row in rows]
print(json.dumps({"longest": max(lengths), "rows": len(lengths)}))
"""


def local_recipe(model: Path, sample: str, args) -> str:
    lines = [
        f"model_name_or_path: {model}",
        f"dataset_name: {sample}",
        f"output_dir: {OUTPUT_DIR}",
        f"max_steps: {args.steps}",
        "logging_steps: 1",
        'save_strategy: "no"',
        "preflight: false",
        "log_completions: false",
    ]
    if args.per_device_batch:
        plan = args.plan
        group = plan.per_device_train_batch_size * plan.gradient_accumulation_steps
        lines += [
            f"per_device_train_batch_size: {args.per_device_batch}",
            f"gradient_accumulation_steps: {group // args.per_device_batch}",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default=tasks.DEFAULT_TASK, choices=sorted(tasks.TASKS))
    parser.add_argument("--steps", type=int, default=2, help="GRPO steps (default 2)")
    parser.add_argument("--per-device-batch", type=int, help="override the recipe's micro-batch")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = parser.parse_args()

    from grpo_kit.offline.real_model import ensure_real_model

    model = ensure_real_model()
    spec, tier, task = catalog.CATALOG[HUB_ID], tiers.TIERS["cpu"], tasks.TASKS[args.task]
    args.plan = plan = tuning.plan(spec, tier, task)
    holder = None if args.keep else tempfile.TemporaryDirectory()
    folder = args.keep or Path(holder.name)
    folder.mkdir(parents=True, exist_ok=True)
    project = bench.bake(folder / "projects", model=HUB_ID, gpu_tier="cpu", task_type=args.task)
    (project / "configs" / "local.yaml").write_text(local_recipe(model, task.sample_data, args))
    threads = str(args.threads)
    env = {**bench.ENV, "PYTHONPATH": str(project / "src"), "OMP_NUM_THREADS": threads,
           "GRPO_TORCH_THREADS": threads}  # fmt: skip
    if os.environ.get("PYTHONPATH"):  # a checkout's kit (PYTHONPATH=kit/src) goes first
        env["PYTHONPATH"] += os.pathsep + os.environ["PYTHONPATH"]
    prompts = json.loads(subprocess.run(
        [sys.executable, "-c", PROMPTS], cwd=project, env=env, capture_output=True, text=True,
        check=True).stdout.strip().splitlines()[-1])  # fmt: skip
    peak_file = folder / "peak.txt"
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", TRAIN, str(peak_file), "--config", "configs/grpo.yaml"],
        cwd=project, env=env, capture_output=True, text=True,
    )  # fmt: skip
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"train failed ({done.returncode}):\n{done.stderr[-3000:]}")
    measured = int(peak_file.read_text())
    state = json.loads((project / OUTPUT_DIR / "trainer_state.json").read_text())
    steps = [row["step_time"] for row in state["log_history"] if "step_time" in row]

    batch = args.per_device_batch or plan.per_device_train_batch_size
    shape = memory.TrainingShape(
        mode=plan.mode, dtype=plan.dtype, optim=plan.optim, per_device_batch=batch,
        generation_batch=plan.generation_batch_size, prompt_tokens=plan.max_prompt_tokens,
        completion_tokens=plan.max_completion_length,
        gradient_checkpointing=plan.gradient_checkpointing, lora_r=plan.lora_r, on_gpu=False,
    )  # fmt: skip
    at_recipe = memory.estimate(spec, shape)
    at_run = memory.estimate(spec, dataclasses.replace(shape, prompt_tokens=prompts["longest"]))
    gib = memory.GIB
    print(f"## Peak memory: {HUB_ID}, cpu tier, {args.task} task, {args.steps} GRPO steps\n")
    print(f"micro-batch {batch} x {plan.num_generations * plan.prompts_per_step // batch} "
          f"accumulated, {plan.num_generations} generations, max_completion_length "
          f"{plan.max_completion_length}, longest prompt {prompts['longest']} tokens of "
          f"max_prompt_tokens {plan.max_prompt_tokens}\n")  # fmt: skip
    print("| | GiB | vs measured |\n| --- | ---: | ---: |")
    print(f"| measured peak RSS | {measured / gib:.2f} | |")
    for label, estimate in (("plan at the run's prompts", at_run),
                            ("plan at max_prompt_tokens", at_recipe)):  # fmt: skip
        print(f"| {label} | {estimate.peak_gib:.2f} | {estimate.peak / measured - 1:+.0%} |")
    print(f"\nplan at the run's prompts: {at_run.summary()}")
    print(f"\nseconds per step: {', '.join(f'{s:.0f}' for s in steps)}; wall {wall:.0f} s")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\nMachine: {bench.machine()}; {threads} torch thread(s), load average {load:.1f}. "
          f"`python benchmarks/memory_peak.py {' '.join(sys.argv[1:])}`.")  # fmt: skip
    if holder is not None:
        holder.cleanup()


if __name__ == "__main__":
    main()
