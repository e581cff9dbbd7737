"""A `grpo` command's CPU time with its start-up as shipped (the training stack imported with the
garbage collector paused, then frozen: grpo_kit/startup.py) and with the collector running as
usual, runs alternated, medians side by side (figures, not tests).

    python benchmarks/startup.py [--runs 3]

It bakes the default project (math, 24GB) in a temporary folder, runs its smoke pipeline once
(evaluate reads that run), then times each command both ways.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from run import ENV, bake, machine, timed

RECIPE = ["--config", "configs/grpo.yaml"]
COMMANDS = {
    "reward-debug": ["reward-debug", *RECIPE, "--limit", "2"],
    "doctor": ["doctor", *RECIPE, "--smoke", "--offline"],
    "evaluate": ["evaluate", *RECIPE, "--smoke", "--limit", "4", "--max-new-tokens", "8"],
    "smoke": ["smoke", *RECIPE],
}
AS_SHIPPED = [sys.executable, "-m", "grpo_kit"]
# The same command with the pause a no-op: the collector runs through the imports and scans
# their objects at every full collection after them.
COLLECTING = [
    sys.executable,
    "-c",
    "import contextlib, runpy, sys; import grpo_kit.startup as s; "
    "s.collector_paused = contextlib.nullcontext; sys.argv[0] = 'grpo'; "
    "runpy.run_module('grpo_kit', run_name='__main__')",
]


def cpu_seconds(command: list[str], cwd: Path, env: dict) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run of `command` and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{result.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="alternated runs per command and way")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        project = bake(Path(folder))
        env = {**ENV, "PYTHONPATH": str(project / "src")}  # the project's package, uninstalled
        print("the smoke run evaluate reads ...", file=sys.stderr)
        timed([*AS_SHIPPED, *COMMANDS["smoke"]], project, env)
        for name, command in COMMANDS.items():
            print(f"timing {name} ...", file=sys.stderr)
            shipped, collecting = [], []
            for _ in range(args.runs):
                shipped.append(cpu_seconds([*AS_SHIPPED, *command], project, env))
                collecting.append(cpu_seconds([*COLLECTING, *command], project, env))
            cpu_a = statistics.median(c for c, _ in shipped)
            cpu_b = statistics.median(c for c, _ in collecting)
            wall_a = statistics.median(w for _, w in shipped)
            wall_b = statistics.median(w for _, w in collecting)
            shipped_text = f"{cpu_a:.2f} s ({wall_a:.2f} s wall)"
            collecting_text = f"{cpu_b:.2f} s ({wall_b:.2f} s wall)"
            rows.append((f"grpo {name}", shipped_text, collecting_text, f"{cpu_a / cpu_b:.2f}x"))
    print("| command | CPU, as shipped | CPU, collector running | ratio |")
    print("| --- | --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"\nMedians of {args.runs} alternated runs each. Machine: {machine()}; "
          f"`python benchmarks/startup.py --runs {args.runs}`.")  # fmt: skip


if __name__ == "__main__":
    main()
