"""The run record: `output_dir/run_record.json`, written when training starts and when it ends.

Everything needed to reproduce or compare a run: the resolved recipe (after command-line
overrides), the command line, package versions, the dataset's source and fingerprint (a hash of
the file for local data), the rows held out for `grpo evaluate` (`held_out`: the dataset's test
split, or the rows of the data a hash of each problem held out; heldout.py), row counts after
filtering, the seed, the git revision (and whether the tree had uncommitted changes), the
held-out prompts evaluated during training (when the recipe evaluates), timings, the final step
and metrics, the health checks that fired (from `health.jsonl`: a NaN shows as `non_finite`),
and how the run ended. NaN and infinite values are written as the strings "nan", "inf" and
"-inf", so the file is strict JSON.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

from ..generation import RUN_RECORD

RECORD = RUN_RECORD  # its one home is generation.py, which reads records (below this module)
PACKAGE = __name__.split(".")[0]  # grpo_kit
PACKAGES = (
    "torch", "transformers", "trl", "peft", "datasets", "accelerate", "unsloth", "vllm",
    "bitsandbytes", "deepspeed", "math-verify",
)  # fmt: skip


def versions() -> dict[str, str]:
    found = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {"python": platform.python_version(), **found}


def git_revision(cwd: Path | None = None) -> dict | None:
    """The commit and whether the working tree differs from it; None outside a git checkout."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10
        )
        if head.returncode != 0:
            return None
        status = subprocess.run(
            ["git", "status", "--porcelain"], cwd=cwd, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return {"revision": head.stdout.strip(), "dirty": bool(status.stdout.strip())}


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def dataset_source(script_args, rows) -> dict:
    source = {
        "name": script_args.dataset_name,
        "config": script_args.dataset_config,
        "split": script_args.dataset_train_split,
        "fingerprint": getattr(rows, "_fingerprint", None),
    }
    path = Path(script_args.dataset_name)
    if path.is_file():
        source["sha256"] = file_sha256(path)
    return source


def _plain(value):
    """JSON-safe copy of a dataclass field value."""
    try:
        json.dumps(value)
    except TypeError:
        return str(value)
    return value


def resolved_recipe(recipe) -> dict:
    values = {}
    for part in (recipe.script, recipe.task, recipe.backend, recipe.model):
        values.update({f.name: _plain(getattr(part, f.name)) for f in dataclasses.fields(part)})
    values.update({k: _plain(v) for k, v in recipe.training.to_dict().items()})
    return values


class RunRecord:
    """Builds the record; `start` and `finish` write it (main process only)."""

    def __init__(self, recipe, argv: list[str], main_process: bool = True):
        self.path = Path(recipe.training.output_dir) / RECORD
        self.main_process = main_process
        self.data = {
            "status": "running",
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            # `python -m grpo_kit train` runs the project's own train script (as `grpo train`).
            "command": [sys.executable, "-m", PACKAGE, "train", *argv],
            "seed": recipe.training.seed,
            "recipe": resolved_recipe(recipe),
            "versions": versions(),
            "git": git_revision(),
        }

    def start(
        self, script_args, rows, stats, reward_settings: dict | None = None,
        held_out: dict | None = None,
    ) -> None:  # fmt: skip
        """`held_out`: the rows evaluate scores, never trained on (heldout.Split.record)."""
        self.data["dataset"] = dataset_source(script_args, rows)
        if held_out is not None:
            self.data["held_out"] = held_out
        # What the rewards ran with, e.g. the code sandbox's isolation level and limits.
        self.data["reward_settings"] = {
            name: value.describe() if hasattr(value, "describe") else _plain(value)
            for name, value in (reward_settings or {}).items()
        }
        self.data["rows"] = {"kept": stats.kept, "dropped_too_long": stats.dropped,
                             "longest_prompt_tokens": stats.longest}  # fmt: skip
        self.write()

    def evaluation(self, source: dict) -> None:
        """Where the prompts evaluated during training come from (see training.py)."""
        self.data["evaluation"] = source
        self.write()

    def finish(
        self,
        state,
        status: str,
        resumed_from: str | None = None,
        health: dict | None = None,
    ) -> None:
        """The outcome; `health`: the checks that fired ({check: summary}, health.fired)."""
        last = [row for row in state.log_history if "reward" in row]
        evaluated = [row for row in state.log_history if "eval_reward" in row]
        self.data.update(
            status=status,
            finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            global_step=state.global_step,
            resumed_from=resumed_from,
            final_metrics=last[-1] if last else {},
            health=health or {},
        )
        if evaluated:
            self.data["final_eval_metrics"] = evaluated[-1]
        self.write()

    def write(self) -> None:
        if not self.main_process:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".json.tmp")
        text = json.dumps(strict(self.data), indent=2, default=str, allow_nan=False)
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(self.path)  # never a half-written record


def strict(value):
    """`value` with NaN and infinities as "nan", "inf", "-inf" (strict JSON keeps no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict(v) for v in value]
    return value
