"""The staged recipe (`configs/stages.yaml`): the task's format rewards first, then all of them.

A model that never writes the answer format gets 0 from the correctness reward on every
completion, so its groups carry no signal; a short first stage on the format rewards alone fixes
that, and the second stage trains on the whole recipe from there. A model that never writes the
format at all gets 0 from the format rewards too: for it, a warm-up stage (`grpo warmup`, a short
supervised fine-tune on the task's ideal completions) comes first, written commented out.
"""

from __future__ import annotations

from . import kit  # noqa: F401 (grpo_kit importable: this checkout's kit first)
from .recipe import max_steps
from .tuning import Plan
from .yaml_text import yaml_scalar

FORMAT_SHARE = 0.2  # of the recipe's max_steps


def stage_steps(plan: Plan) -> tuple[int, int]:
    total = max_steps(plan)
    first = max(1, round(total * FORMAT_SHARE))
    return first, total - first


def _flow(mapping: dict) -> str:
    return "{" + ", ".join(f"{k}: {yaml_scalar(v)}" for k, v in mapping.items()) + "}"


def render(plan: Plan) -> str:
    # grpo filter's and grpo warmup's defaults, written out for the user to change
    from grpo_kit.stage_options import FILTER, WARMUP

    task = plan.task
    formats = [r for r in task.rewards if r.kind == "format"]
    first, second = stage_steps(plan)
    # An agent's answers are tool-calling rollouts, which the warm-up (SFT on text) cannot train.
    warm = [] if task.kit.environments is not None else [
        "  # A model that never writes the format (make preflight says so) gets no signal from",
        "  # either stage: warm the format up first, a short supervised fine-tune on the task's",
        "  # ideal completions (make warmup); the next stage starts from its merged model:",
        f"  # - {{name: \"warmup\", warmup: {_flow(WARMUP)}}}",
    ]  # fmt: skip
    lines = [
        "# Staged training: grpo stages configs/stages.yaml (make stages).",
        "# Each stage is the `recipe:` with the stage's keys replaced; a stage after the first",
        "# starts from the previous stage's weights (its merged model when it trained an adapter).",
        f"# Stage 1 teaches the {task.name} task's answer format, so that stage 2's correctness",
        "# reward has answers to read. Any recipe key can be set per stage.",
        'recipe: "configs/grpo.yaml"',
        "stages:",
        *warm,
        '  - name: "format"',
        f"    reward_funcs: {yaml_scalar([r.name for r in formats])}",
        f"    reward_weights: {yaml_scalar([1.0] * len(formats))}",
        f"    max_steps: {first}",
        '  - name: "correctness"  # the whole recipe: its rewards and weights',
        f"    max_steps: {second}",
        "    # Re-run the difficulty filter with stage 1's model first, and train on the prompts",
        "    # still in the band (make filter; its files go to the stage's filter/ folder):",
        f"    # refilter: {_flow(FILTER)}",
    ]
    return "\n".join(lines) + "\n"
