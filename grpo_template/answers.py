"""The user's answers, read as data and validated: one clear error per bad answer.

The pre-generation hook calls `validate()`; an `AnswerError` becomes one line on stderr and
cookiecutter removes the half-made project folder.
"""

from __future__ import annotations

import dataclasses
import keyword
import math
import re
import sys
from dataclasses import dataclass
from functools import cached_property

from . import algorithms, catalog, tasks, tiers
from .catalog import ModelSpec
from .tuning import DoesNotFit, Plan, plan

BACKENDS = ("transformers", "unsloth")
TRACKERS = ("none", "tensorboard", "trackio", "wandb")

_NAME_RE = re.compile(r"^[\w][\w .,'()+-]{0,79}$")
_SLUG_RE = re.compile(r"^[a-z][a-z0-9-]{0,38}[a-z0-9]$")
_PACKAGE_RE = re.compile(r"^[a-z][a-z0-9_]{0,38}[a-z0-9]$")
# Import names the generated project depends on: a package with one of these names would shadow it.
RESERVED_PACKAGES = {
    "accelerate",
    "bitsandbytes",
    "datasets",
    "grpo_kit",
    "hypothesis",
    "jsonschema",
    "math_verify",
    "numpy",
    "pandas",
    "peft",
    "pytest",
    "rich",
    "ruff",
    "safetensors",
    "src",
    "tensorboard",
    "test",
    "tests",
    "tokenizers",
    "torch",
    "transformers",
    "trl",
    "unsloth",
    "unsloth_zoo",
    "vllm",
    "wandb",
    "yaml",
}


# The custom model id's default: shown at the prompt so the format is clear, never accepted.
CUSTOM_ID_PLACEHOLDER = "your-org/your-model"


# Why backend=unsloth does not train the tools task (one place: the refusal and the README).
UNSLOTH_TOOLS = (
    "TRL's tool loop runs on Unsloth's CPU fallback (stock GRPOTrainer), but the GPU trainer "
    "Unsloth patches in (its compiled loss with the tool mask, vLLM rollouts) is not verified "
    "with tools here; use backend=transformers"
)


class AnswerError(ValueError):
    """An answer (or combination of answers) that cannot produce a working project."""


@dataclass(frozen=True)
class Answers:
    project_name: str
    project_slug: str
    package_name: str
    model: str
    custom_model_id: str
    custom_model_params_b: str
    task_type: str
    gpu_tier: str
    backend: str
    tracker: str
    num_gpus: str = "1"
    num_nodes: str = "1"
    # Projects generated before the answer existed trained TRL's default loss: dapo.
    algorithm: str = algorithms.DEFAULT

    @classmethod
    def from_context(cls, context: dict) -> Answers:
        """Pick the answers out of cookiecutter's context (extra keys are ignored)."""
        fields = cls.__dataclass_fields__
        required = [n for n, f in fields.items() if f.default is dataclasses.MISSING]
        missing = [name for name in required if name not in context]
        if missing:
            raise AnswerError(f"missing answers: {', '.join(missing)}")
        return cls(**{name: str(context[name]).strip() for name in fields if name in context})

    @cached_property
    def model_spec(self) -> ModelSpec:
        if self.model == catalog.CUSTOM:
            return catalog.custom_model(self.custom_model_id, float(self.custom_model_params_b))
        return catalog.CATALOG[self.model]

    @property
    def tier(self) -> tiers.Tier:
        """The tier, sized by num_gpus/num_nodes for the multi-GPU tiers."""
        tier = tiers.TIERS[self.gpu_tier]
        return tier.scaled(int(self.num_gpus), int(self.num_nodes)) if tier.scalable else tier

    @property
    def task(self) -> tasks.TaskSpec:
        return tasks.TASKS[self.task_type]

    @cached_property
    def plan(self) -> Plan:
        return plan(self.model_spec, self.tier, self.task, self.backend)


def _choice(name: str, value: str, allowed) -> None:
    if value not in allowed:
        raise AnswerError(f"{name} '{value}' is not offered; choose one of: {', '.join(allowed)}")


def _empty(name: str, how: str) -> AnswerError:
    return AnswerError(f"{name} is empty: {how}")


NAME_RULE = (
    "up to 80 letters, digits, spaces and . , ' ( ) + - _ (no quotes, braces or backslashes)"
)
SLUG_RULE = "use 2-40 lowercase letters, digits and single '-', starting with a letter"
PACKAGE_RULE = "use 2-40 lowercase letters, digits and '_', starting with a letter"


def check_project_name(name: str) -> None:
    if not name:
        raise _empty("project_name", f"give the project a name: {NAME_RULE}")
    if not _NAME_RE.match(name):
        raise AnswerError(f"project_name {name!r} is not allowed: use {NAME_RULE}")


def check_slug(slug: str) -> None:
    if not slug:
        raise _empty("project_slug", f"{SLUG_RULE} (e.g. project_slug=my-grpo-project)")
    if not _SLUG_RE.match(slug) or "--" in slug:
        raise AnswerError(
            f"project_slug {slug!r} is not valid: {SLUG_RULE} (e.g. project_slug=my-grpo-project)"
        )


def check_package(package: str) -> None:
    if not package:
        raise _empty("package_name", f"{PACKAGE_RULE} (e.g. package_name=my_grpo_project)")
    if not _PACKAGE_RE.match(package):
        raise AnswerError(
            f"package_name {package!r} is not a valid Python package name: {PACKAGE_RULE} "
            "(e.g. package_name=my_grpo_project)"
        )
    if keyword.iskeyword(package) or keyword.issoftkeyword(package):
        raise AnswerError(f"package_name {package!r} is a Python keyword; pick another name")
    if package in sys.stdlib_module_names or package in RESERVED_PACKAGES:
        raise AnswerError(
            f"package_name {package!r} would shadow the '{package}' module the project imports; "
            f"pick another name (e.g. {package}_grpo)"
        )


def check_names(answers: Answers) -> None:
    check_project_name(answers.project_name)
    check_slug(answers.project_slug)
    check_package(answers.package_name)


def check_model_id(model: str, custom_model_id: str) -> None:
    """The model answer, and a custom model's Hub id (asked right after it)."""
    _choice("model", model, [*catalog.CATALOG, catalog.CUSTOM])
    if model != catalog.CUSTOM:
        return
    if custom_model_id == CUSTOM_ID_PLACEHOLDER:
        raise AnswerError(
            f"custom_model_id is still the placeholder {CUSTOM_ID_PLACEHOLDER!r}: give the Hub id "
            "of your model, e.g. custom_model_id=mistralai/Mistral-7B-Instruct-v0.3"
        )
    if not catalog.valid_hub_id(custom_model_id):
        raise AnswerError(
            f"custom_model_id {custom_model_id!r} is not a Hub model id: use owner/name, "
            "e.g. custom_model_id=mistralai/Mistral-7B-Instruct-v0.3"
        )


def check_model_size(model: str, custom_model_params_b: str) -> None:
    """A custom model's size in billions of parameters."""
    if model != catalog.CUSTOM:
        return
    try:
        size = float(custom_model_params_b)
    except ValueError:
        size = math.nan
    if not (0.01 <= size <= 1000):
        raise AnswerError(
            f"custom_model_params_b {custom_model_params_b!r} must be the model's size in "
            "billions of parameters, e.g. custom_model_params_b=7.2"
        )


def check_model(answers: Answers) -> None:
    check_model_id(answers.model, answers.custom_model_id)
    check_model_size(answers.model, answers.custom_model_params_b)


def _count(name: str, value: str, low: int, high: int) -> int:
    try:
        number = int(value)
    except ValueError:
        number = low - 1
    if not low <= number <= high:
        raise AnswerError(f"{name} {value!r} must be a whole number from {low} to {high}")
    return number


def check_backend(answers: Answers) -> None:
    if answers.backend == "unsloth" and answers.tier.gpus > 1:
        raise AnswerError(
            f"backend=unsloth is not offered for the {answers.gpu_tier} tier: Unsloth's multi-GPU "
            "GRPO is not mature; use backend=transformers for several GPUs, or a single-GPU tier"
        )
    spec = answers.model_spec
    if answers.backend == "unsloth" and spec.unsloth:
        raise AnswerError(
            f"backend=unsloth is not offered for {spec.hub_id}: {spec.unsloth}; use "
            "backend=transformers"
        )


def tool_calling_models() -> list[str]:
    return [hub_id for hub_id, spec in catalog.CATALOG.items() if spec.tool_calling]


def check_task(answers: Answers) -> None:
    """The tools task needs a chat template TRL can train tool calls with, and the Transformers
    backend (see UNSLOTH_TOOLS)."""
    if answers.task_type != "tools":
        return
    spec = answers.model_spec
    if not spec.tool_calling:
        why = (
            "a custom model's chat template is unknown here"
            if answers.model == catalog.CUSTOM
            else f"TRL 1.16 cannot render and parse tool calls with {spec.hub_id}'s chat template"
        )
        raise AnswerError(
            f"task_type=tools is not offered for {spec.hub_id}: {why}; choose one of: "
            f"{', '.join(tool_calling_models())}"
        )
    if answers.backend == "unsloth":
        raise AnswerError(f"task_type=tools is not offered with backend=unsloth: {UNSLOTH_TOOLS}")


def check_gpu_count(gpu_tier: str, num_gpus: str) -> None:
    """GPUs per node: asked for every tier (Cookiecutter cannot skip a question), counted only on
    the multi-GPU tiers; a one-GPU tier takes 1."""
    tier = tiers.TIERS[gpu_tier]
    if gpu_tier == "multi-gpu":
        _count("num_gpus", num_gpus, 2, tiers.MAX_GPUS_PER_NODE)
    elif gpu_tier == "multi-node":
        _count("num_gpus", num_gpus, 1, tiers.MAX_GPUS_PER_NODE)
    elif num_gpus not in ("", "1"):
        has = "has one GPU" if tier.is_gpu else "runs on the CPU of one machine"
        raise AnswerError(
            f"num_gpus {num_gpus!r} does not apply to the {tier.name} tier: this tier {has}: "
            "answer 1 (several GPUs: gpu_tier=multi-gpu for one node, multi-node for more)"
        )


def check_node_count(gpu_tier: str, num_nodes: str) -> None:
    """Nodes: counted only on the multi-node tier."""
    if gpu_tier == "multi-node":
        _count("num_nodes", num_nodes, 2, tiers.MAX_NODES)


def check_scale(answers: Answers) -> None:
    """GPU and node counts matter only for the multi-GPU tiers (and are checked only there)."""
    check_gpu_count(answers.gpu_tier, answers.num_gpus)
    check_node_count(answers.gpu_tier, answers.num_nodes)


def validate(context: dict) -> Answers:
    """All checks, cheapest first; returns the answers with a plan that fits."""
    answers = Answers.from_context(context)
    check_names(answers)
    check_model(answers)
    _choice("task_type", answers.task_type, tasks.TASKS)
    _choice("gpu_tier", answers.gpu_tier, tiers.TIERS)
    _choice("backend", answers.backend, BACKENDS)
    _choice("tracker", answers.tracker, TRACKERS)
    _choice("algorithm", answers.algorithm, algorithms.ALGORITHMS)
    check_scale(answers)
    check_backend(answers)
    check_task(answers)
    try:
        answers.plan  # noqa: B018 - computing the plan is the check
    except DoesNotFit as err:
        raise AnswerError(str(err)) from err
    return answers


def validate_early(context: dict) -> None:
    """What can be refused as soon as the model, task and tier are answered, before the other
    questions are asked: the names, the model, and (for single-machine tiers) whether the model
    fits with either backend. The pre-generation hook still runs `validate` on everything."""
    answers = Answers.from_context({"backend": BACKENDS[0], "tracker": TRACKERS[0], **context})
    check_names(answers)
    check_model(answers)
    _choice("task_type", answers.task_type, tasks.TASKS)
    _choice("gpu_tier", answers.gpu_tier, tiers.TIERS)
    check_task(dataclasses.replace(answers, backend=BACKENDS[0]))  # the backend is asked later
    if tiers.TIERS[answers.gpu_tier].scalable:
        return  # the fit depends on the GPU and node counts, asked next
    refusals = []
    for backend in BACKENDS:
        try:
            dataclasses.replace(answers, backend=backend).plan  # noqa: B018 - the check
            return
        except DoesNotFit as err:
            refusals.append(str(err))
    raise AnswerError(refusals[0])


def _given(context: dict, *names: str) -> list[str]:
    return [str(context.get(name, "")).strip() for name in names]


def check_task_early(context: dict) -> None:
    """Right after the task question: the task is offered for this model (the tier and backend,
    asked later, stand at values that decide nothing here)."""
    later = {"gpu_tier": tiers.DEFAULT_TIER, "backend": BACKENDS[0], "tracker": TRACKERS[0]}
    answers = Answers.from_context({**later, **context})
    _choice("task_type", answers.task_type, tasks.TASKS)
    check_task(answers)


# The check each answer gets as soon as it is given: cookiecutter renders a never-asked key
# right after the question (questions.py), so a bad answer is refused before the next question.
# Each check reads only that answer and the ones before it.
CHECKS_AFTER = {
    "project_name": lambda c: check_project_name(*_given(c, "project_name")),
    "project_slug": lambda c: check_slug(*_given(c, "project_slug")),
    "package_name": lambda c: check_package(*_given(c, "package_name")),
    "custom_model_id": lambda c: check_model_id(*_given(c, "model", "custom_model_id")),
    "custom_model_params_b": lambda c: check_model_size(
        *_given(c, "model", "custom_model_params_b")
    ),
    "task_type": check_task_early,
    "gpu_tier": validate_early,
    "num_gpus": lambda c: check_gpu_count(*_given(c, "gpu_tier", "num_gpus")),
    "num_nodes": lambda c: check_node_count(*_given(c, "gpu_tier", "num_nodes")),
}


def check_answer(question: str, context: dict) -> None:
    """The check that runs right after `question` is answered (CHECKS_AFTER)."""
    CHECKS_AFTER[question](context)
