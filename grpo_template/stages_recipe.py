"""The staged recipe (`configs/stages.yaml`): the task's format rewards first, then all of them.

A model that never writes the answer format gets 0 from the correctness reward on every
completion, so its groups carry no signal; a short first stage on the format rewards alone fixes
that, and the second stage trains on the whole recipe from there.
"""

from __future__ import annotations

from .recipe import max_steps
from .tuning import Plan
from .yaml_text import yaml_scalar

FORMAT_SHARE = 0.2  # of the recipe's max_steps


def stage_steps(plan: Plan) -> tuple[int, int]:
    total = max_steps(plan)
    first = max(1, round(total * FORMAT_SHARE))
    return first, total - first


def render(plan: Plan) -> str:
    task = plan.task
    formats = [r for r in task.rewards if r.kind == "format"]
    first, second = stage_steps(plan)
    lines = [
        "# Staged training: grpo stages configs/stages.yaml (make stages).",
        "# Each stage is the `recipe:` with the stage's keys replaced; a stage after the first",
        "# starts from the previous stage's weights (its merged model when it trained an adapter).",
        f"# Stage 1 teaches the {task.name} task's answer format, so that stage 2's correctness",
        "# reward has answers to read. Any recipe key can be set per stage.",
        'recipe: "configs/grpo.yaml"',
        "stages:",
        '  - name: "format"',
        f"    reward_funcs: {yaml_scalar([r.name for r in formats])}",
        f"    reward_weights: {yaml_scalar([1.0] * len(formats))}",
        f"    max_steps: {first}",
        '  - name: "correctness"  # the whole recipe: its rewards and weights',
        f"    max_steps: {second}",
    ]
    return "\n".join(lines) + "\n"
