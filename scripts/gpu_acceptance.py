"""GPU acceptance: the catalog's exact model shapes, with random weights, trained 2 steps each by
a generated project's own train under its tier's memory cap (`grpo gpu-check`), and one table of
the card's peak against the template's estimate per case.

    python scripts/gpu_acceptance.py [--work DIR] [--budget 480] [--steps 2] [--only NAME ...]

Run it through scripts/gpu_acceptance.sh on a machine with a CUDA GPU (it installs carried wheels
first). Per case: bake the case's project (cookiecutter, no network), write a random-weight model
of the catalog model's exact shape with the project's tokenizer (`grpo acceptance model`: the
parameter count is checked against the catalog), run `grpo gpu-check --local-model` on it (its
verdict applies: same shapes, same memory), then delete the model. Cases share the time budget
(a case may use what the ones before it left); one that runs out is reported as timed out. vLLM
colocates where the plan does and vLLM imports; without vLLM those cases train with
`--use_vllm false` and the table says the estimate was not compared. The table is printed and
written to WORK/acceptance.md, headed by the date and the machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from grpo_template import catalog, tasks, tiers, tuning  # noqa: E402

TASK = "math"
BACKEND = "transformers"
# Text-only architectures whose shape the catalog's fields fully describe (multimodal and
# hybrid checkpoints carry towers and layer layouts these fields do not).
DENSE = ("qwen2", "qwen3", "llama", "phi3", "smollm3", "gemma3_text")
PROJECT = "Acceptance"  # every case's project_name (each is baked into its own folder)
PACKAGE = "acceptance"


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    tier: str
    model: str
    mode: str  # the plan mode the case covers (full, lora, qlora); the plan must still say so


CASES = (
    Case("24GB LoRA", "24GB", "Qwen/Qwen2.5-7B-Instruct", "lora"),
    Case("24GB QLoRA", "24GB", "Qwen/Qwen3-8B", "qlora"),
    Case("16GB fp16", "16GB", "Qwen/Qwen3-4B", "lora"),
    Case("80GB full FT", "80GB", "Qwen/Qwen3-1.7B", "full"),
    Case("80GB LoRA", "80GB", "Qwen/Qwen3-8B", "lora"),
)


def plan_of(case: Case) -> tuning.Plan:
    return tuning.plan(catalog.lookup(case.model), tiers.TIERS[case.tier], tasks.TASKS[TASK])


def describe(plan: tuning.Plan) -> str:
    vllm = f"vLLM {plan.vllm_mode}" if plan.vllm_mode else "no vLLM"
    return f"{plan.mode} {plan.dtype}, {vllm}"


def shape(model: str) -> dict:
    """The catalog model's exact shape: its transformers config fields and parameter count."""
    spec = catalog.lookup(model)
    if spec.tiny_arch not in DENSE:
        raise ValueError(f"{model}: only dense text models ({', '.join(DENSE)}) are built here")
    config = {
        "model_type": spec.tiny_arch,
        "hidden_size": spec.hidden,
        "intermediate_size": spec.intermediate,
        "num_hidden_layers": spec.layers,
        "num_attention_heads": spec.heads,
        "num_key_value_heads": spec.kv_heads,
        "head_dim": spec.head_dim,
        "vocab_size": spec.vocab,
        "tie_word_embeddings": spec.tied_embeddings,
        "max_position_embeddings": spec.context,
    }
    return {"config": config, "params": spec.params}


def record(case: Case) -> dict:
    """What the table and the logs say about the case (case.json)."""
    return {"name": case.name, "model": case.model, "tier": case.tier,
            "plan": describe(plan_of(case))}  # fmt: skip


def bake_command(python: str, case: Case, out_dir: Path) -> list[str]:
    answers = {"project_name": PROJECT, "package_name": PACKAGE, "model": case.model,
               "task_type": TASK, "gpu_tier": case.tier, "backend": BACKEND,
               "tracker": "none"}  # fmt: skip
    return [python, "-m", "cookiecutter", str(ROOT), "--no-input", "-o", str(out_dir),
            *(f"{k}={v}" for k, v in answers.items())]  # fmt: skip


def model_command(python: str, shape_file: Path, model_dir: Path) -> list[str]:
    return [python, "-m", "grpo_kit.commands.acceptance", "model", str(shape_file),
            str(model_dir)]  # fmt: skip


def vllm_available() -> bool:
    return importlib.util.find_spec("vllm") is not None


def gpu_check_command(
    python: str, model_dir: Path, report: Path, steps: int, plan: tuning.Plan, vllm: bool
) -> list[str]:
    """gpu-check on the random-weight copy; the recipe as planned, except vLLM off when the plan
    colocates it and vLLM is not installed (then the table says: not compared)."""
    command = [python, "-m", "grpo_kit", "gpu-check", "--local-model", str(model_dir),
               "--steps", str(steps), "--report", str(report)]  # fmt: skip
    if plan.vllm_mode and not vllm:
        command += ["--use_vllm", "false"]
    return command


def _run(command: list[str], cwd: Path, log, timeout: float) -> int:
    """Run `command` (output to `log`); 124 when it runs past `timeout` (its group killed)."""
    log.write(f"$ {' '.join(command)}\n")
    log.flush()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": "src"}
    try:
        process = subprocess.Popen(command, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                   env=env, start_new_session=True)  # fmt: skip
    except OSError as err:  # no such folder or program: this case's row says so, the next runs
        log.write(f"could not start: {err}\n")
        return 127
    try:
        return process.wait(timeout=max(timeout, 1))
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return 124


def run_case(case: Case, folder: Path, python: str, steps: int, deadline: float) -> int:
    """Bake, build the model, gpu-check; the exit code of the step that stopped (0: all ran)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "case.json").write_text(json.dumps(record(case), indent=2), encoding="utf-8")
    shape_file = folder / "shape.json"
    shape_file.write_text(json.dumps(shape(case.model), indent=2), encoding="utf-8")
    project = folder / PROJECT.lower()
    model_dir = folder / "model"
    with open(folder / "log.txt", "w", encoding="utf-8") as log:
        steps_of_case = [
            (bake_command(python, case, folder), folder),
            (model_command(python, shape_file, model_dir), project),
            (gpu_check_command(python, model_dir, folder / "gpu-check.json", steps,
                               plan_of(case), vllm_available()), project),
        ]  # fmt: skip
        code = 0
        for command, cwd in steps_of_case:
            code = _run(command, cwd, log, deadline - time.monotonic())
            if code:
                break
    shutil.rmtree(model_dir, ignore_errors=True)  # the next case needs the disk
    (folder / "exit_code").write_text(f"{code}\n")
    return code


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("outputs/gpu-acceptance"))
    parser.add_argument("--budget", type=float, default=480, help="seconds for all cases")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--only", nargs="*", help="case names to run (default: all)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    from grpo_kit.commands import acceptance

    args = parse_args(argv)
    args.work = args.work.resolve()  # each step runs in its own folder: paths must not be relative
    cases = [c for c in CASES if not args.only or c.name in args.only]
    python = sys.executable
    start = time.monotonic()
    folders = []
    for index, case in enumerate(cases):
        folder = args.work / f"{index + 1}-{case.name.replace(' ', '-').lower()}"
        if folder.exists():
            shutil.rmtree(folder)
        share = (args.budget - (time.monotonic() - start)) / (len(cases) - index)
        print(f"acceptance: {case.name} ({case.model}, {describe(plan_of(case))}): "
              f"up to {share:.0f} s", flush=True)  # fmt: skip
        code = run_case(case, folder, python, args.steps, time.monotonic() + share)
        print(f"acceptance: {case.name}: exit {code} after {time.monotonic() - start:.0f} s")
        folders.append(folder)
    text = (
        acceptance.heading(folders)
        + "\n\n"
        + acceptance.table([acceptance.case_row(f) for f in folders])
    )
    (args.work / "acceptance.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    rows = [acceptance.case_row(f) for f in folders]
    return 0 if all(row["verdict"] == "pass" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
