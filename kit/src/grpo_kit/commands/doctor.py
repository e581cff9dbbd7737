"""`grpo doctor` (`make doctor`): preflight checks before a (long, paid) training run.

Checks the machine against the recipe and the tier the project was generated for (GPU count,
memory, bf16), the installed library versions against the project's pins, optional packages the
recipe needs (vLLM, bitsandbytes, DeepSpeed), the dataset (reachable, columns valid), the Hub
token for gated models, and the prompt-length distribution in tokens with the `max_prompt_tokens`
it recommends. Each finding says what to do. Exit code: 0 when nothing blocks the run (warnings
allowed), 1 when something does. Takes the same recipe arguments as `train` (`--smoke` checks
the offline smoke setup); `--offline` skips everything that needs the network.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from ..errors import UserError
from ..runner import run

OK, INFO, WARN, FAIL = "ok", "info", "warn", "FAIL"


@dataclass(frozen=True)
class Finding:
    level: str
    check: str
    message: str
    fix: str = ""


def _gib(n: float) -> str:
    return f"{n / 1024**3:.1f} GiB"


def check_python() -> list[Finding]:
    """Reported for the record: the package itself requires Python 3.11 to install."""
    return [Finding(OK, "python", "Python " + ".".join(map(str, sys.version_info[:3])))]


def check_hardware(recipe, cuda: bool, cpu_requested: bool) -> list[Finding]:
    """GPU presence, count, memory and bf16 against the tier and the recipe."""
    import torch

    training, tier = recipe.training, recipe.project.tier
    build = f"torch {torch.__version__}, CUDA build {torch.version.cuda}"
    findings = [Finding(INFO, "torch", build)]
    needs_gpu = tier.is_gpu and not cpu_requested
    if not cuda:
        if needs_gpu:
            findings.append(
                Finding(
                    FAIL,
                    "gpu",
                    f"no CUDA GPU found; this project was tuned for the {tier.name} tier "
                    f"({tier.gpus_per_node} x {tier.memory_gib:g} GiB GPU)",
                    "run on a machine with the GPU, or use --smoke for an offline CPU check, or "
                    "regenerate the project with gpu_tier=cpu",
                )
            )
        else:
            findings.append(Finding(OK, "gpu", "no GPU, and the recipe trains on the CPU"))
        return findings
    count = torch.cuda.device_count()
    names = {torch.cuda.get_device_name(i) for i in range(count)}
    memory = min(torch.cuda.get_device_properties(i).total_memory for i in range(count))
    findings.append(Finding(INFO, "gpu", f"{count} x {', '.join(sorted(names))} ({_gib(memory)})"))
    expected = tier.gpus_per_node
    if count < expected:
        findings.append(
            Finding(
                FAIL,
                "gpu count",
                f"{count} GPU(s) visible, the {tier.name} tier expects {expected} per node",
                "check CUDA_VISIBLE_DEVICES, or regenerate with the tier that matches",
            )
        )
    budget = tier.memory_gib * 1024**3
    if memory < budget * 0.97:
        findings.append(
            Finding(
                FAIL if memory < tier.estimated_peak_gib * 1024**3 else WARN,
                "gpu memory",
                f"{_gib(memory)} per GPU; the recipe was tuned for {tier.memory_gib:g} GiB "
                f"(estimated peak {tier.estimated_peak_gib:.1f} GiB)",
                "regenerate for a smaller tier, or lower per_device_train_batch_size, "
                "num_generations or max_completion_length",
            )
        )
    elif memory > budget * 1.5:
        findings.append(
            Finding(
                WARN,
                "gpu memory",
                f"{_gib(memory)} per GPU, more than the {tier.name} tier assumes",
                "regenerate for the bigger tier to use it (larger batches, longer completions)",
            )
        )
    if training.bf16 and not torch.cuda.is_bf16_supported():
        findings.append(
            Finding(
                FAIL,
                "bf16",
                "the recipe uses bf16 but this GPU does not support it",
                "set bf16: false, fp16: true and dtype: float16 (or regenerate with gpu_tier=16GB)",
            )
        )
    return findings


def _requirements(root: Path) -> list[str]:
    """The project's pinned requirements, from its pyproject.toml."""
    import tomllib

    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return []
    table = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    return list(table.get("dependencies", []))


def check_versions(root: Path) -> list[Finding]:
    from packaging.requirements import Requirement

    findings = []
    for text in _requirements(root):
        requirement = Requirement(text)
        if requirement.marker is not None and "extra" in str(requirement.marker):
            continue
        try:
            installed = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            findings.append(
                Finding(FAIL, "versions", f"{requirement.name} is not installed", "make install")
            )
            continue
        if requirement.specifier and not requirement.specifier.contains(
            installed, prereleases=True
        ):
            findings.append(
                Finding(
                    FAIL,
                    "versions",
                    f"{requirement.name} {installed} is outside the tested range "
                    f"{requirement.specifier}",
                    f'pip install "{requirement}"',
                )
            )
    if not findings:
        findings.append(Finding(OK, "versions", "installed libraries match the project's pins"))
    return findings


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def check_optional_packages(recipe, cuda: bool) -> list[Finding]:
    training, model, tier = recipe.training, recipe.model, recipe.project.tier
    findings = []
    if training.use_vllm and cuda:
        if _installed("vllm"):
            findings.append(
                Finding(OK, "vllm", f"vLLM {metadata.version('vllm')} ({training.vllm_mode})")
            )
        else:
            findings.append(
                Finding(
                    FAIL,
                    "vllm",
                    "use_vllm is true but vLLM is not installed",
                    "pip install -e '.[gpu]' (or set use_vllm: false: slower generation)",
                )
            )
    needs_bnb = model.load_in_4bit or model.load_in_8bit or "8bit" in str(training.optim)
    if needs_bnb and cuda and not _installed("bitsandbytes"):
        findings.append(
            Finding(
                FAIL,
                "bitsandbytes",
                "the recipe uses 4-bit weights or an 8-bit optimizer but bitsandbytes is missing",
                "pip install -e '.[gpu]'",
            )
        )
    if tier.distributed.startswith("zero") and not _installed("deepspeed"):
        findings.append(
            Finding(
                FAIL if cuda else WARN,
                "deepspeed",
                f"the {tier.distributed} launch config needs DeepSpeed, which is not installed",
                "pip install -e '.[gpu]'",
            )
        )
    return findings


def check_hub(recipe, offline: bool) -> list[Finding]:
    """Token for gated models; reachability of the model and dataset ids."""
    from huggingface_hub import HfApi, get_token

    name = recipe.model.model_name_or_path
    if not name:
        fix = "set model_name_or_path in configs/grpo.yaml (a Hub id or a folder)"
        return [Finding(FAIL, "model", "the recipe names no model_name_or_path", fix)]
    findings = []
    local_model = Path(name).exists()
    if recipe.project.gated and not local_model and not get_token():
        findings.append(
            Finding(
                FAIL,
                "hub token",
                f"{name} is gated and no Hugging Face token is configured",
                "accept the licence on the model page, then `hf auth login` (or set HF_TOKEN)",
            )
        )
    if offline:
        findings.append(Finding(INFO, "hub", "offline: Hub checks skipped"))
        return findings
    api = HfApi()
    targets = [] if local_model else [("model", name)]
    from ..data import is_local

    if not is_local(recipe.script.dataset_name):
        targets.append(("dataset", recipe.script.dataset_name))
    for kind, repo in targets:
        try:
            info = api.model_info if kind == "model" else api.dataset_info
            info(repo, timeout=10)
            findings.append(Finding(OK, "hub", f"{kind} {repo} is reachable"))
        except Exception as err:  # network errors, 401/404: all are findings, not crashes
            findings.append(
                Finding(
                    FAIL,
                    "hub",
                    f"cannot reach {kind} {repo}: {type(err).__name__}: {str(err)[:160]}",
                    "check the id, your network and token (or pass --offline to skip)",
                )
            )
    return findings


def percentile(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def check_reward_settings(recipe) -> list[Finding]:
    """The task's reward settings, checked as training checks them (the label set, the code
    sandbox's isolation level and limits)."""
    try:
        settings = recipe.project.task.reward_settings(recipe.task)
    except UserError as err:
        return [Finding(FAIL, "rewards", str(err), "see the message; training stops there too")]
    findings = []
    for name, value in settings.items():
        if not hasattr(value, "describe"):
            continue
        facts = value.describe()
        check = "sandbox" if "isolation" in facts else name
        line = value.summary() if hasattr(value, "summary") else str(facts)
        if facts.get("isolation") == "process":
            fix = "install bubblewrap (apt-get install bubblewrap) or enable user namespaces"
            findings.append(Finding(WARN, check, f"{line}: NOT isolated from your files", fix))
        else:
            findings.append(Finding(OK, check, line))
    return findings


def check_data(recipe, rows_limit: int, offline: bool, hub_failed: bool) -> list[Finding]:
    """Load and validate the data, then measure prompt lengths with the model's tokenizer."""
    from .. import data
    from ..tokenizer import load_tokenizer

    task = recipe.project.task
    if not data.is_local(recipe.script.dataset_name) and (offline or hub_failed):
        why = "offline" if offline else "the Hub is unreachable"
        return [Finding(WARN, "data", f"{why}: {recipe.script.dataset_name} not loaded", "")]
    try:
        rows = data.load_training_rows(recipe.script, recipe.task, task)
    except UserError as err:
        return [Finding(FAIL, "data", str(err), "fix the data or the column settings")]
    findings = [
        Finding(OK, "data", f"{len(rows)} rows from {recipe.script.dataset_name}, columns valid")
    ]
    try:
        tokenizer = load_tokenizer(recipe.model, recipe.training.trust_remote_code)
    except UserError as err:
        return [*findings, Finding(WARN, "prompt lengths", f"tokenizer unavailable: {err}")]
    sample = rows.select(range(min(rows_limit, len(rows))))
    conversations = data.to_conversations(sample, recipe.script, recipe.task, task)
    kwargs = recipe.training.chat_template_kwargs  # as TRL renders the prompts
    lengths = [data.prompt_token_count(tokenizer, row["prompt"], kwargs) for row in conversations]
    limit = recipe.script.max_prompt_tokens
    dropped = sum(length > limit for length in lengths)
    p50, p90, top = percentile(lengths, 0.5), percentile(lengths, 0.9), max(lengths)
    suggested = int(math.ceil(percentile(lengths, 0.99) / 64) * 64)
    message = (
        f"prompt tokens over {len(lengths)} rows: p50 {p50}, p90 {p90}, max {top}; "
        f"max_prompt_tokens={limit} drops {dropped} ({100 * dropped / len(lengths):.1f}%)"
    )
    fix = f"recommended max_prompt_tokens: {suggested} (keeps 99% of rows)"
    findings.append(
        Finding(WARN if dropped > 0.05 * len(lengths) else OK, "prompt lengths", message, fix)
    )
    return findings


def check_disk(recipe) -> list[Finding]:
    output = Path(recipe.training.output_dir)
    existing = output if output.exists() else Path.cwd()
    free = shutil.disk_usage(existing).free
    if free < 20 * 1024**3:
        return [
            Finding(
                WARN,
                "disk",
                f"{_gib(free)} free for {output}",
                "checkpoints of big models need tens of GiB",
            )
        ]
    return [Finding(OK, "disk", f"{_gib(free)} free for {output}")]


def parse_args(argv: Sequence[str] | None):
    parser = argparse.ArgumentParser(
        prog="grpo doctor",
        description="Preflight checks; other arguments are recipe overrides, as for train.",
    )
    parser.add_argument("--offline", action="store_true", help="skip checks that need the network")
    parser.add_argument("--rows", type=int, default=2000, help="rows measured for prompt lengths")
    return parser.parse_known_args(argv)


def diagnose(argv: Sequence[str] | None = None) -> list[Finding]:
    import torch

    from ..recipe import parse_recipe
    from ..training import ensure_offline_model

    args, recipe_args = parse_args(argv)
    offline = args.offline or os.environ.get("HF_HUB_OFFLINE") == "1"
    if offline:
        os.environ["HF_HUB_OFFLINE"] = "1"
    cuda = torch.cuda.is_available()
    cpu_requested = "--use_cpu" in recipe_args or "--smoke" in recipe_args
    findings = check_python()
    try:
        # Without a GPU, read the recipe as it is (a GPU recipe parses here) and check it.
        recipe = parse_recipe(recipe_args, read_only=not cuda)
    except UserError as err:
        return [*findings, Finding(FAIL, "recipe", str(err), "fix configs/grpo.yaml")]
    findings.append(Finding(OK, "recipe", "recipe parses against the installed TRL"))
    ensure_offline_model(recipe)  # --smoke: the tiny model, built on first use
    findings += check_hardware(recipe, cuda, cpu_requested)
    findings += check_versions(recipe.project.root)
    findings += check_optional_packages(recipe, cuda)
    hub = check_hub(recipe, offline)
    findings += hub
    hub_failed = any(f.check == "hub" and f.level == FAIL for f in hub)
    findings += check_reward_settings(recipe)
    findings += check_data(recipe, args.rows, offline, hub_failed)
    findings += check_disk(recipe)
    return findings


def show(findings: list[Finding], title: str = "doctor") -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in ("", "check", "finding", "what to do"):
        table.add_column(column)
    style = {OK: "green", INFO: "blue", WARN: "yellow", FAIL: "bold red"}
    for finding in findings:
        table.add_row(
            f"[{style[finding.level]}]{finding.level}", finding.check, finding.message, finding.fix
        )
    Console(width=160).print(table)


def doctor(argv: Sequence[str] | None = None) -> None:
    from ..project import load as load_project

    project = load_project()
    findings = diagnose(argv)
    show(findings, f"doctor: {project.model} on the {project.tier.name} tier")
    blockers = [f for f in findings if f.level == FAIL]
    if blockers:
        raise UserError(f"{len(blockers)} blocker(s): " + "; ".join(f.check for f in blockers))
    print("doctor: nothing blocks training")


def main(argv: Sequence[str] | None = None) -> int:
    code = run(doctor, argv)
    return 1 if code == 2 else code
