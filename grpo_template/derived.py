"""Values the project template places: everything derived from the answers lives here.

Template files only place these values (`{{ grpo("recipe_yaml") }}`); the knowledge behind them
is in the tested modules (catalog, tiers, tuning, recipe, stack).
"""

from __future__ import annotations

import json
from functools import lru_cache

from . import algorithms, catalog, kit, recipe, reward_model, stack, stages_recipe
from .answers import Answers


def launch_command(plan) -> str:
    """How this tier's training is started."""
    if plan.tier.nodes > 1:
        return "sbatch scripts/multinode.sbatch (grpo launch on each node)"
    if plan.processes > 1 or plan.vllm_mode == "server":
        return "grpo launch (vLLM server + accelerate launch)"
    return "make train (grpo train --config configs/grpo.yaml)"


def train_command(plan) -> str:
    """The Makefile's `train` recipe line for this tier."""
    if plan.tier.nodes > 1:
        return "sbatch scripts/multinode.sbatch $(ARGS)"
    if plan.processes > 1 or plan.vllm_mode == "server":
        return "$(GRPO) launch -- $(ARGS)"
    return "$(GRPO) train --config $(RECIPE) $(ARGS)"


def smoke_distributed_command(plan) -> str:
    """The Makefile's `smoke-distributed` line, on every tier: the kit's launcher (`grpo launch
    --smoke`) starts 2 CPU processes as the tier starts training (accelerate with the plan's
    config where the plan is `launched_by_accelerate`, torchrun (gloo) where it is not) with
    the recipe's `--smoke-distributed` layer: its checkpointing and DDP settings on the tiny
    model. It builds the tiny model once before the processes start (each would build it, and
    one could read the other's half-written folder)."""
    return "$(GRPO) launch --smoke -- $(ARGS)"  # the launcher reads the plan's [tool.grpo.tier]


# What `make install` prints when it has to remove torchvision (the test of the Unsloth stack
# reads it).
TORCHVISION_REMOVED = "install: torchvision removed"


def post_install(backend: str) -> str:
    """The Makefile lines run after `pip install`. Unsloth requires torchvision, and pip takes
    PyPI's: a CUDA build, which cannot load beside a CPU-only torch (and then breaks `import
    unsloth`). It is replaced by the same version's CPU build from PyTorch's CPU index (or the
    index TORCH_INDEX names), which keeps `pip check` clean. Where no CPU build can be had (the
    index does not answer), torchvision is removed, as text models do not need it, and the
    install says that `pip check` will name it."""
    if backend != "unsloth":
        return "@echo installed"
    index = "$(if $(filter auto pypi,$(TORCH_INDEX)),$(TORCH_CPU_INDEX),$(TORCH_INDEX))"
    loads = '$(PYTHON) -c "import torchvision" 2>/dev/null'
    version = "from importlib.metadata import version; print(version('torchvision'))"
    lines = [
        f"@{loads} || {{ \\",
        f'  i="{index}"; v=$$($(PYTHON) -c "{version}"); \\',
        "  echo \"install: torchvision $$v (PyPI's CUDA build) does not load beside this torch: "
        'its CPU build from $$i"; \\',
        "  $(PYTHON) -m pip install -q --retries 1 --timeout 15 --force-reinstall --no-deps "
        '--index-url "$$i" "torchvision==$$v"; \\',
        f"  {loads} || {{ \\",
        f'    echo "{TORCHVISION_REMOVED}: no CPU build of it from $$i (no answer, or none of '
        "this version); text models do not need it, but pip check will say that unsloth "
        "requires it (to clear it: make install TORCH_INDEX=<a reachable mirror of the CPU "
        'index>)"; \\',
        "    $(PYTHON) -m pip uninstall -q -y torchvision; }; }",
    ]
    return "\n\t".join(lines)


def distribution(plan) -> str:
    if plan.tier.gpus <= 1:
        return "one device"
    server = f" + vLLM server on {plan.vllm_server_gpus} GPU(s)" if plan.vllm_server_gpus else ""
    processes = (
        "1 training process" if plan.processes == 1 else f"{plan.processes} training processes"
    )
    return f"{processes} on {plan.tier.nodes} node(s) with {plan.accelerate_config}{server}"


def judge_placement(plan) -> str:
    """The generated README's line on serving a judge on a training GPU (GPU tiers): the largest
    `--gpu-memory-utilization` that leaves the plan's peak per GPU and its margin free
    (`grpo_kit.rewards.judge.colocated_share`, which `grpo doctor` applies to the memory it
    measures beside a judge served on the node); empty for the cpu tier."""
    from grpo_kit.rewards.judge import colocated_share

    tier, peak = plan.tier, plan.memory.peak_gib
    if not tier.is_gpu:
        return ""
    share = colocated_share(tier.memory_gib, peak)
    needs = f"the plan needs {peak:.1f} of {tier.memory_gib:g} GiB per GPU"
    if share <= 0:
        return f"No training GPU has room for it ({needs})."
    return (
        f"Sharing a training GPU, it may take `--gpu-memory-utilization {share:.2f}` at most "
        f"({needs})."
    )


def tier_summary(plan) -> str:
    """The tier in the generated README: the question's label, or for several GPUs the sizes
    the answers gave (the label says they are asked next)."""
    tier = plan.tier
    if tier.gpus <= 1:
        return tier.label
    return f"{tier.nodes} node(s) of {tier.gpus_per_node} x {tier.memory_gib:g} GiB GPUs"


def recipe_header(answers: Answers) -> str:
    plan = answers.plan
    return (
        f"GRPO recipe: {plan.model.hub_id} on the {plan.tier.name} tier ({plan.tier.examples}), "
        f"{plan.task.name} task, {answers.backend} backend.\n"
        f"Launch: {launch_command(plan)}; {distribution(plan)}.\n"
        "Generated by grpo-template and checked against the pinned TRL. Every key is a field\n"
        "of grpo_kit's ScriptArguments, the task's TaskArguments (src/<package>/task.py),\n"
        "trl.GRPOConfig or trl.ModelConfig; put your changes in configs/local.yaml, or override\n"
        "any of them on the command line, e.g. --learning_rate 2e-5 --max_steps 100."
    )


def rewards_table(answers: Answers) -> str:
    """The generated README's table of the task's rewards: names and what each checks. The
    weights are not in it: their one home is the project's task.py (`TASK.rewards`), which the
    user edits and `grpo recipe --explain` shows; a number here would go stale."""
    lines = ["| reward | what it checks |", "| --- | --- |"]
    for reward in answers.task.rewards:
        lines.append(f"| `{reward.name}` | {reward.why} |")
    return "\n".join(lines)


def recommended_sampling(model, thinking: bool) -> tuple[dict | None, str]:
    """[tool.grpo] recommended_sampling: the model card's sampling (the catalog's) for the mode
    the recipe's chat template renders, which evaluate and infer decode with by default, and why
    (its source). None (greedy) when the catalog has none, or has it for the other mode: a task
    that switches a thinking model's thinking off."""
    sampling = model.sampling
    if sampling is None:
        return None, "the catalog holds no model-card sampling for this model: greedy"
    if thinking != model.thinking:
        mode = "thinking" if model.thinking else "non-thinking"
        return None, f"the card's sampling is for {mode} mode, not this recipe's: greedy"
    fields = {"temperature": sampling.temperature, "top_p": sampling.top_p, "top_k": sampling.top_k}
    where = catalog.SOURCES[sampling.source]  # in words: a URL or a repository file, not a tag
    return fields, f"the sampling recommended for this model, per {where}"


def toml_value(value) -> str:
    """A TOML value for a str, bool, int, float or a flat dict of those."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def tool_grpo(answers: Answers) -> str:
    """The `[tool.grpo]` table of the project's pyproject.toml: what grpo-kit reads about the
    project (grpo_kit.project.Project), each line with what it is."""
    plan = answers.plan
    reward_base = reward_model.plan(plan).model
    sampling, sampling_note = recommended_sampling(plan.model, plan.thinking)
    project = [
        ("package", answers.package_name, "task.py (TASK), rewards.py"),
        ("backend", answers.backend, "transformers or unsloth"),
        ("model", plan.model.hub_id, "the model this project was generated for"),
        ("gated", plan.model.gated, "its licence must be accepted on the Hub"),
        ("tiny_arch", plan.model.tiny_arch, "the offline tiny model's architecture"),
        ("chat_template", plan.model.chat_template or "", "its chat template (TRL's copy)"),
        ("reward_tiny_arch", reward_base.tiny_arch, "configs/reward_model.yaml's base, likewise"),
        ("reward_chat_template", reward_base.chat_template or "", ""),
    ]
    if sampling is not None:
        project.append(
            ("recommended_sampling", sampling, f"evaluate/infer default: {sampling_note}")
        )
    tier = [
        ("name", plan.tier.name, plan.tier.label),
        ("memory_gib", float(plan.tier.memory_gib), "per GPU (RAM for the cpu tier)"),
        ("gpus_per_node", plan.tier.gpus_per_node, ""),
        ("nodes", plan.tier.nodes, ""),
        ("processes", plan.processes, "training processes"),
        ("distributed", plan.distributed, "none (one process), ddp, zero2 or zero3"),
        ("accelerate_config", plan.accelerate_config or "", "for accelerate launch"),
        ("vllm_server_gpus", plan.vllm_server_gpus, ""),
        ("estimated_peak_gib", round(plan.memory.peak_gib, 1), "per device, the memory model's"),
    ]
    lines = ["# What grpo-kit reads about this project (the `grpo` command); generated."]
    lines.append("[tool.grpo]")
    lines += [_toml_line(key, value, why) for key, value, why in project]
    if sampling is None:
        lines.append(f"# recommended_sampling: none ({sampling_note})")
    lines += ["", "[tool.grpo.tier]"]
    lines += [_toml_line(key, value, why) for key, value, why in tier]
    return "\n".join(lines) + "\n"


def _toml_line(key: str, value, why: str) -> str:
    line = f"{key} = {toml_value(value)}"
    return f"{line}  # {why}" if why else line


PACKAGE = "<package>"  # the knowledge modules' stand-in for the package name, filled in here


def sources_table(answers: Answers) -> str:
    """data/SOURCES.md's table: every sample file the project holds, where it comes from and
    its licence (the kit's record, grpo_kit.starters.SAMPLES)."""
    from grpo_kit.starters import SAMPLES

    from .layout import starter_files

    lines = ["| file | what | source | licence |", "| --- | --- | --- | --- |"]
    for path in starter_files(answers):
        if path.startswith("data/"):
            what, source, licence = SAMPLES[path.removeprefix("data/")]
            lines.append(f"| `{path}` | {what} | {source} | {licence} |")
    return "\n".join(lines)


def values(answers: Answers) -> dict:
    """Every value the template places, with the package's real name where a text names it."""
    found = _values(answers)
    return {
        key: value.replace(PACKAGE, answers.package_name) if isinstance(value, str) else value
        for key, value in found.items()
    }


def _values(answers: Answers) -> dict:
    plan = answers.plan
    return {
        "model_id": plan.model.hub_id,
        "tool_grpo": tool_grpo(answers),
        "sample_data": plan.task.sample_data,
        # make reward-debug's own arguments: the task's labelled completions, when it ships some
        "reward_debug_args": (f"--completions {plan.task.labelled} " if plan.task.labelled else ""),
        "recipe_yaml": recipe.render(
            plan, answers.tracker, recipe_header(answers), answers.algorithm
        ),
        "reward_model_yaml": reward_model.render(plan, answers.tracker),
        "output_dir": f"outputs/{recipe.run_name(plan)}",
        "dependencies": [
            kit.requirement(plan.task.kit_extras),
            *stack.dependencies(answers.backend, answers.tracker, plan.task.extra_dependencies),
        ],
        "gpu_dependencies": stack.gpu_dependencies(plan),
        "kernel_dependencies": stack.kernel_dependencies(plan.model),
        "dev_dependencies": list(stack.DEV),
        "cpu_torch": stack.CPU_TORCH,
        "torch_cpu_index": stack.TORCH_CPU_INDEX,
        "mode": plan.mode,
        "memory_summary": plan.memory.summary(),
        "tier_label": plan.tier.label,
        "tier_summary": tier_summary(plan),
        "task_label": plan.task.label,
        "dataset_note": plan.task.dataset_note,
        "gated": plan.model.gated,
        "num_gpus": plan.tier.gpus_per_node,
        "num_nodes": plan.tier.nodes,
        "tier_memory_gib": plan.tier.memory_gib,
        "processes": plan.processes,
        "distributed": plan.distributed,
        "accelerate_config": plan.accelerate_config or "",
        "vllm_server_gpus": plan.vllm_server_gpus,
        "estimated_peak_gib": round(plan.memory.peak_gib, 1),
        "judge_placement": judge_placement(plan),
        "launch_command": launch_command(plan),
        "train_command": train_command(plan),
        "smoke_distributed_command": smoke_distributed_command(plan),
        "post_install": post_install(answers.backend),
        "stack_summary": stack.summary(answers.backend),
        "distribution": distribution(plan),
        "rewards_table": rewards_table(answers),
        "stages_yaml": stages_recipe.render(plan),
        "metric_note": plan.task.metric_note,
        "tracker_note": recipe.TRACKER_NOTES[answers.tracker],
        "sources_table": sources_table(answers),
        "algorithm_table": algorithms.readme_table(answers.algorithm),
        "algorithm_paper": "{0.paper}, arXiv:{0.arxiv}".format(algorithms.get(answers.algorithm)),
        "kit_requirement": kit.requirement(plan.task.kit_extras),
        "kit_version": kit.VERSION,
    }


@lru_cache(maxsize=64)
def _cached(key: tuple) -> dict:
    return values(Answers(*key))


def lookup(context: dict, name: str):
    """One value for the answers in a cookiecutter context (cached per answer set);
    `kit_makefile` (the Makefile's KIT) depends on where the template came from (cookiecutter's
    `_template`), not on the answers."""
    if name == "kit_makefile":
        return kit.makefile_value(context.get("_template"))
    answers = Answers.from_context(context)
    key = tuple(getattr(answers, f) for f in Answers.__dataclass_fields__)
    return _cached(key)[name]
