"""Report: plots and a summary of a training run, from the files the run left.

    grpo report [RUN_DIR] [--output-dir DIR]

Reads `trainer_state.json` (the run's, or its newest checkpoint's) and writes PNG plots of the
reward (total and per function), reward_std and the share of zero-std groups, kl (when beta > 0),
entropy, completion length, clipped ratio and learning rate (and, for a tool-calling run, tool
calls per rollout and the share that failed, against the recipe's `max_tool_calling_iterations`),
plus `report.md`: the metrics at the start, end and best, the health verdicts (the checks of
`health.py` over the whole run) and, when the run logged completions (`log_completions: true`),
the best and worst completion of each logged step.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from ..callbacks.health import (
    HEALTH_LOG,
    TOOL_CALLS,
    TOOL_FAILURES,
    Limits,
    assess,
    default_limits,
    limits_from,
    training_rows,
    uses_tools,
)
from ..callbacks.run_record import RECORD
from ..errors import UserError
from ..recipe import ScriptArguments, add_recipe_options, recipe_from
from ..runner import run

# (file name, title, [(metric key, label)])
PLOTS = (
    ("reward.png", "Reward", [("reward", "total (weighted)")]),
    ("reward_std.png", "Reward spread", [("reward_std", "reward_std"),
                                         ("frac_reward_zero_std", "share of zero-std groups")]),
    ("kl.png", "KL to the reference", [("kl", "kl")]),
    ("entropy.png", "Token entropy", [("entropy", "entropy")]),
    ("completion_length.png", "Completion length (tokens)", [
        ("completions/mean_length", "mean"), ("completions/max_length", "max"),
        ("completions/mean_terminated_length", "mean of those that ended")]),
    ("clipped_ratio.png", "Completions cut at max_completion_length",
     [("completions/clipped_ratio", "clipped ratio")]),
    ("learning_rate.png", "Learning rate", [("learning_rate", "learning rate")]),
)  # fmt: skip
TOOL_PLOT = "tool_use.png"
TOOL_CHECKS = ("no_tool_calls", "tool_call_cap", "tool_failures")
SUMMARY_KEYS = ("reward", "reward_std", "frac_reward_zero_std", "kl", "entropy",
                "completions/mean_length", "completions/clipped_ratio")  # fmt: skip


def parse_args(argv: Sequence[str] | None):
    parser = argparse.ArgumentParser(
        prog="grpo report",
        description="Plots and a markdown summary of a training run.",
        epilog="Other options (--config PATH, --smoke, recipe fields) choose the recipe whose "
        "output_dir is the default run.",
    )
    parser.add_argument("run_dir", nargs="?", type=Path, default=None,
                        help="the run's output_dir (default: the recipe's)")  # fmt: skip
    parser.add_argument("--output-dir", type=Path, help="default: RUN_DIR/report")
    add_recipe_options(parser)
    args, overrides = parser.parse_known_args(argv)
    if args.run_dir is None:
        args.run_dir = Path(recipe_from(args, overrides, read_only=True).training.output_dir)
    elif overrides:
        parser.error(f"unrecognized arguments: {' '.join(overrides)}")
    return args


def find_state(run_dir: Path) -> Path:
    """The run's trainer_state.json, or its newest checkpoint's."""
    if (run_dir / "trainer_state.json").is_file():
        return run_dir / "trainer_state.json"
    checkpoints = sorted(
        run_dir.glob("checkpoint-*/trainer_state.json"),
        key=lambda p: int(p.parent.name.split("-")[-1]),
    )
    if not checkpoints:
        raise UserError(f"{run_dir}: no trainer_state.json (train first, or pass the run folder)")
    return checkpoints[-1]


def series(rows: list[dict], key: str) -> tuple[list[int], list[float]]:
    points = [(r["step"], r[key]) for r in rows if isinstance(r.get(key), int | float)]
    return [p[0] for p in points], [p[1] for p in points]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot(rows: list[dict], out: Path, reward_names: list[str]) -> list[Path]:
    plt = _pyplot()
    written = []
    per_reward = [(f"rewards/{name}/mean", name) for name in reward_names]
    for filename, title, curves in PLOTS:
        if filename == "reward.png":
            curves = curves + per_reward
        drawn = [(label, *series(rows, key)) for key, label in curves]
        drawn = [d for d in drawn if d[1]]
        if not drawn:
            continue  # e.g. kl without beta
        figure, axes = plt.subplots(figsize=(7, 4))
        for label, steps, values in drawn:
            axes.plot(steps, values, marker="o" if len(steps) < 30 else None, label=label)
        axes.set(title=title, xlabel="step")
        axes.grid(alpha=0.3)
        if len(drawn) > 1:
            axes.legend()
        figure.tight_layout()
        figure.savefig(out / filename, dpi=100)
        plt.close(figure)
        written.append(out / filename)
    return written


def plot_tools(rows: list[dict], out: Path, limits: Limits) -> Path | None:
    """Tool calls per rollout (with the max_tool_calling_iterations cap when the run set one)
    and the share of calls that failed (with its warning threshold); None for a run without
    tool metrics."""
    if not uses_tools(rows):
        return None
    plt = _pyplot()
    figure, (calls, failures) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    cap = limits.max_tool_calling_iterations
    panels = (
        (calls, TOOL_CALLS, "tool calls per rollout", cap,
         f"cap (max_tool_calling_iterations {cap})"),
        (failures, TOOL_FAILURES, "share of calls that failed", limits.tool_failure_max,
         f"warns above (health_tool_failure_max {limits.tool_failure_max:g})"),
    )  # fmt: skip
    for axes, key, label, line, line_label in panels:
        steps, values = series(rows, key)
        axes.plot(steps, values, marker="o" if len(steps) < 30 else None, label=label)
        if line:
            axes.axhline(line, color="tab:red", linestyle="--", label=line_label)
        axes.set(ylabel=label)
        axes.grid(alpha=0.3)
        axes.legend()
    failures.set(xlabel="step", ylim=(-0.02, 1.02))
    calls.set(title="Tool use")
    figure.tight_layout()
    figure.savefig(out / TOOL_PLOT, dpi=100)
    plt.close(figure)
    return out / TOOL_PLOT


def tool_summary(rows: list[dict], limits: Limits) -> str:
    """A line or two on tool use: calls per rollout and failed calls, first and last."""
    steps, calls = series(rows, TOOL_CALLS)
    _, failed = series(rows, TOOL_FAILURES)
    if not calls:
        return "The tool metrics hold no numbers."
    cap = limits.max_tool_calling_iterations
    capped = f"max_tool_calling_iterations {cap}" if cap else "no max_tool_calling_iterations"
    lines = [
        f"- Tool calls per rollout: {calls[0]:.3g} at step {steps[0]}, {calls[-1]:.3g} at step "
        f"{steps[-1]}, most {max(calls):.3g} ({capped})."
    ]
    if failed:
        lines.append(
            f"- Failed calls: {failed[0]:.0%} of calls at the first log, {failed[-1]:.0%} at the "
            f"last (a warning above {limits.tool_failure_max:.0%})."
        )
    return "\n".join(lines)


def reward_names(rows: list[dict]) -> list[str]:
    names = []
    for row in rows:
        for key in row:
            if key.startswith("rewards/") and key.endswith("/mean"):
                name = key[len("rewards/") : -len("/mean")]
                if name not in names:
                    names.append(name)
    return names


def metric_table(rows: list[dict]) -> str:
    lines = ["| metric | first | last | best |", "| --- | ---: | ---: | ---: |"]
    keys = [
        *SUMMARY_KEYS[:1],
        *(f"rewards/{n}/mean" for n in reward_names(rows)),
        *SUMMARY_KEYS[1:],
    ]
    for key in keys:
        _, values = series(rows, key)
        if not values:
            continue
        best = (
            min(values)
            if key in ("frac_reward_zero_std", "completions/clipped_ratio", "kl")
            else max(values)
        )
        lines.append(f"| `{key}` | {values[0]:.4g} | {values[-1]:.4g} | {best:.4g} |")
    return "\n".join(lines)


def health_verdicts(rows: list[dict], limits: Limits) -> str:
    """Each check's verdict over the run: the steps where it fired (at most 200 prefixes)."""
    fired: dict[str, list[int]] = {}
    stride = max(1, len(rows) // 200)
    ends = sorted({*range(stride, len(rows) + 1, stride), len(rows)})
    for end in ends:
        for finding in assess(rows[:end], limits):
            fired.setdefault(finding.check, []).append(finding.step)
    checks = ("reward_std", "kl", "entropy", "clipped_ratio", "plateau", "reward_hacking")
    if uses_tools(rows):
        checks += TOOL_CHECKS
    lines = ["| check | verdict |", "| --- | --- |"]
    for check in checks:
        steps = fired.get(check)
        if not steps:
            lines.append(f"| {check} | ok |")
        else:
            lines.append(
                f"| {check} | warned at {len(steps)} logs (steps {steps[0]}-{steps[-1]}) |"
            )
    return "\n".join(lines)


def _text(value, limit: int = 400) -> str:
    if isinstance(value, list):  # a conversation: its last user message (or last message)
        messages = [m for m in value if isinstance(m, dict)]
        users = [m for m in messages if m.get("role") == "user"] or messages
        value = users[-1].get("content", "") if users else ""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def total(row: dict, columns: list[str]) -> float:
    """A logged completion's summed rewards (unweighted; None counts as 0)."""
    return sum(float(row[c]) for c in columns if isinstance(row.get(c), int | float))


def completions_summary(run_dir: Path, names: list[str]) -> str:
    """Best and worst completion of each logged step (from log_completions' parquet files)."""
    import pyarrow.parquet as pq

    files = sorted((run_dir / "completions").glob("completions_*.parquet"))
    if not files:
        return "No completions log (set `log_completions: true` in the recipe to get one).\n"
    parts = []
    for path in files:
        table = pq.read_table(path).to_pylist()
        if not table:
            continue
        columns = [n for n in names if n in table[0]]

        ranked = sorted(table, key=lambda row, columns=columns: total(row, columns))
        step = table[0].get("step", path.stem.split("_")[-1])
        parts.append(f"### step {step}\n")
        for label, row in (("best", ranked[-1]), ("worst", ranked[0])):
            scores = ", ".join(f"{c} {row[c]:.3g}" for c in columns if row.get(c) is not None)
            parts.append(f"- **{label}** ({scores}): prompt: {_text(row.get('prompt'), 160)}")
            parts.append(f"  completion: {_text(row.get('completion'))}")
        parts.append("")
    return "\n".join(parts)


def limits_for(run_dir: Path, task) -> Limits:
    """The health thresholds the run used (from its run record), else the defaults."""
    import dataclasses

    record = run_dir / RECORD
    if not record.is_file():
        return default_limits()
    values = json.loads(record.read_text(encoding="utf-8"))["recipe"]
    names = {f.name for f in dataclasses.fields(ScriptArguments)}
    script = ScriptArguments(**{k: v for k, v in values.items() if k in names})
    correctness = task.correctness
    return limits_from(
        script,
        beta=values.get("beta") or 0.0,
        max_completion_length=values.get("max_completion_length") or 0,
        correctness=correctness if correctness in script.reward_funcs else None,
        max_tool_calling_iterations=values.get("max_tool_calling_iterations"),
    )


def report(argv: Sequence[str] | None = None) -> Path:
    args = parse_args(argv)
    run_dir = args.run_dir
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such run folder (train first, or pass the output_dir)")
    state_path = find_state(run_dir)
    state = json.loads(state_path.read_text(encoding="utf-8"))
    rows = training_rows(state.get("log_history", []))
    if not rows:
        raise UserError(f"{state_path}: no training logs yet (logging_steps may exceed the steps)")
    out = args.output_dir or run_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    names = reward_names(rows)
    from ..project import load as load_project

    limits = limits_for(run_dir, load_project().task)
    images = plot(rows, out, names)
    tools = plot_tools(rows, out, limits)
    if tools is not None:
        images.append(tools)
    events = run_dir / HEALTH_LOG
    raised = 0
    if events.is_file():
        raised = sum(1 for line in events.read_text().splitlines() if '"raised"' in line)
    summary = "\n\n".join(
        [
            f"# Training report: {run_dir}",
            f"{len(rows)} logged steps, last step {rows[-1]['step']} (from `{state_path}`).",
            "## Metrics\n\n" + metric_table(rows),
            *(["## Tool use\n\n" + tool_summary(rows, limits)] if tools is not None else []),
            "## Health\n\n"
            + health_verdicts(rows, limits)
            + f"\n\n{raised} event(s) raised during training (`{HEALTH_LOG}`).",
            "## Plots\n\n" + "\n".join(f"![{p.stem}]({p.name})" for p in images),
            "## Completions\n\n" + completions_summary(run_dir, names),
        ]
    )
    (out / "report.md").write_text(summary + "\n", encoding="utf-8")
    print(f"report written to {out / 'report.md'} ({len(images)} plots)")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    return run(report, argv)
