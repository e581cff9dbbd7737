"""Report: plots and a summary of a training run, from the files the run left.

    grpo report [RUN_DIR] [--output-dir DIR]

Reads `trainer_state.json` (the run's, or its newest checkpoint's) and writes PNG plots of the
reward (total and per function), reward_std and the share of zero-std groups, kl (when beta > 0),
entropy, completion length, clipped ratio and learning rate (and, for a tool-calling run, tool
calls per rollout and the share that failed, against the recipe's `max_tool_calling_iterations`),
plus `report.md`: the metrics at the start, end and best; the health table, built from the
run's `health.jsonl` (exactly the checks that fired during training, each with its steps, whether
it was still active at the end, and the monitor's advice; a run folder without one gets the
checks recomputed from the logs, and says so); any NaN or infinite value the logs hold; when the
run evaluated during training (`eval_strategy: steps`), the held-out metrics beside the training
ones (`evaluation.png`); and, when the run logged completions (`log_completions: true`), the best
and worst completion of each logged step.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path

from ..callbacks.health import (
    HEALTH_LOG,
    TOOL_CALLS,
    TOOL_FAILURES,
    HealthLimits,
    assess,
    default_limits,
    fired,
    limits_from,
    non_finite_values,
    read_events,
    training_rows,
    uses_tools,
    warmup_origin,
)
from ..callbacks.run_record import RECORD
from ..errors import UserError
from ..generation import run_record_of
from ..recipe import ScriptArguments, add_recipe_options, recipe_from
from ..runner import run
from ..text import markdown_code

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
EVAL_PLOT = "evaluation.png"
EVAL_REWARD = "eval_reward"  # TRL prefixes the metrics of an evaluation with eval_
TOOL_CHECKS = ("no_tool_calls", "tool_call_cap", "tool_failures", "tool_budget_cuts")
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
    """(steps, values) of `key`, finite values only (NaN is reported apart: `non_finite`)."""
    points = [
        (r["step"], r[key])
        for r in rows
        if isinstance(r.get(key), int | float) and math.isfinite(r[key])
    ]
    return [p[0] for p in points], [p[1] for p in points]


def evaluation_rows(history: list[dict]) -> list[dict]:
    """The logs of the evaluations during training (TRL's `eval_*` metrics)."""
    return [row for row in history if EVAL_REWARD in row]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot(
    rows: list[dict], out: Path, reward_names: list[str], evaluated: Sequence[dict] = ()
) -> list[Path]:
    """The training plots; `evaluated` (evaluation logs) adds the held-out total reward beside
    the training one."""
    plt = _pyplot()
    written = []
    per_reward = [(f"rewards/{name}/mean", name) for name in reward_names]
    held_out = [(EVAL_REWARD, "held-out total (evaluation)")]
    for filename, title, curves in PLOTS:
        if filename == "reward.png":
            curves = curves + per_reward + held_out
        drawn = [(label, *series([*rows, *evaluated], key)) for key, label in curves]
        drawn = [d for d in drawn if d[1]]
        if not drawn:
            continue  # e.g. kl without beta
        figure, axes = plt.subplots(figsize=(7, 4))
        for label, steps, values in drawn:
            style = "--" if label.startswith("held-out") else "-"
            axes.plot(steps, values, style, marker="o" if len(steps) < 30 else None, label=label)
        axes.set(title=title, xlabel="step")
        axes.grid(alpha=0.3)
        if len(drawn) > 1:
            axes.legend()
        figure.tight_layout()
        figure.savefig(out / filename, dpi=100)
        plt.close(figure)
        written.append(out / filename)
    return written


def plot_evaluation(
    rows: list[dict], evaluated: list[dict], out: Path, metric: str | None
) -> Path | None:
    """Held-out evaluation against training: the total reward, and the task's metric (its
    correctness reward) when the run logged it; None for a run that did not evaluate."""
    if not evaluated:
        return None
    plt = _pyplot()
    curves = [("training total", rows, "reward"), ("held-out total", evaluated, EVAL_REWARD)]
    if metric:
        curves += [
            (f"training {metric}", rows, f"rewards/{metric}/mean"),
            (f"held-out {metric}", evaluated, f"eval_rewards/{metric}/mean"),
        ]
    figure, axes = plt.subplots(figsize=(7, 4))
    for label, source, key in curves:
        steps, values = series(source, key)
        if steps:
            dashed = "--" if label.startswith("held-out") else "-"
            axes.plot(steps, values, dashed, marker="o" if len(steps) < 30 else None, label=label)
    axes.set(title="Held-out evaluation during training", xlabel="step")
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(out / EVAL_PLOT, dpi=100)
    plt.close(figure)
    return out / EVAL_PLOT


def evaluation_summary(evaluated: list[dict], record: dict) -> str:
    """Where the held-out prompts came from and the evaluation metrics, first, last and best."""
    source = record.get("evaluation") or {}
    where = source.get("from", "the recipe's held-out prompts")
    count = source.get("prompts")
    lines = [
        f"{len(evaluated)} evaluation(s) during training, on "
        f"{f'{count} prompts: ' if count is not None else ''}{where}.",
        "",
        "| metric | first | last | best |",
        "| --- | ---: | ---: | ---: |",
    ]
    keys = [EVAL_REWARD, *(f"eval_rewards/{n}/mean" for n in reward_names(evaluated, "eval_"))]
    for key in keys:
        _, values = series(evaluated, key)
        if values:
            lines.append(f"| `{key}` | {values[0]:.4g} | {values[-1]:.4g} | {max(values):.4g} |")
    return "\n".join(lines)


def plot_tools(rows: list[dict], out: Path, limits: HealthLimits) -> Path | None:
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


def tool_summary(rows: list[dict], limits: HealthLimits) -> str:
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


def reward_names(rows: list[dict], prefix: str = "") -> list[str]:
    """The rewards logged (`<prefix>rewards/<name>/mean`), in order of appearance."""
    names = []
    head = f"{prefix}rewards/"
    for row in rows:
        for key in row:
            if key.startswith(head) and key.endswith("/mean"):
                name = key[len(head) : -len("/mean")]
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


def health_table(events: list[dict]) -> str:
    """The checks that fired during training, from the run's health.jsonl events (`read_events`):
    exactly those, each with its severity, the steps it was raised at, whether it was still
    active at the end, and what the monitor said (its advice)."""
    summary = fired(events)
    if not summary:
        return "No health check fired during training (`health.jsonl` holds no raised event)."
    lines = [
        "| check | severity | raised | at the end | what it means and what to change |",
        "| --- | --- | --- | --- | --- |",
    ]
    for check, entry in summary.items():
        first, last = entry["first_step"], entry["last_step"]
        steps = f"step {first}" if first == last else f"steps {first}-{last}"
        times = entry["raised"]
        raised = f"{times} time{'s' if times != 1 else ''} ({steps})"
        end = "still active" if entry.get("active") else f"cleared at step {entry['cleared_step']}"
        message = " ".join(str(entry.get("message") or "").split()).replace("|", "\\|")
        lines.append(f"| {check} | {entry['severity']} | {raised} | {end} | {message} |")
    quiet = "Every other check stayed quiet."
    return "\n".join(lines) + f"\n\n{quiet}"


def non_finite_summary(rows: list[dict]) -> str:
    """The logs that hold NaN or infinite values (empty when none)."""
    found: dict[str, list] = {}
    for row in rows:
        for key in non_finite_values(row):
            found.setdefault(key, []).append(row.get("step"))
    if not found:
        return ""
    parts = [f"`{key}` at step(s) {', '.join(map(str, steps))}" for key, steps in found.items()]
    return "**NaN or infinite values in the logs**: " + "; ".join(parts) + "."


def health_section(run_dir: Path, rows: list[dict], limits: HealthLimits) -> str:
    """The health table from health.jsonl; a run folder without one (a monitor older than the
    `started` event, or none) gets each check recomputed over its logs, labelled as such."""
    path = run_dir / HEALTH_LOG
    parts = []
    if path.is_file():
        events = read_events(path)
        raised = sum(1 for e in events if e.get("event") == "raised")
        parts += [
            health_table(events),
            f"{raised} event(s) raised during training (`{HEALTH_LOG}`).",
        ]
    else:
        parts += [
            f"No `{HEALTH_LOG}` in {run_dir}: the checks below are recomputed from the logs "
            "with the run's thresholds.",
            health_verdicts(rows, limits),
        ]
    nan = non_finite_summary(rows)
    return "\n\n".join([*([nan] if nan else []), *parts])


def health_verdicts(rows: list[dict], limits: HealthLimits) -> str:
    """Each check's verdict over the run, recomputed from the logs (for a run folder without
    health.jsonl): the steps where it fired (at most 200 prefixes)."""
    fired: dict[str, list[int]] = {}
    stride = max(1, len(rows) // 200)
    ends = sorted({*range(stride, len(rows) + 1, stride), len(rows)})
    for end in ends:
        for finding in assess(rows[:end], limits):
            fired.setdefault(finding.check, []).append(finding.step)
    checks = ("non_finite", "reward_std", "correctness_spread", "kl", "entropy",
              "clipped_ratio", "plateau", "reward_hacking", "sampling", "reward_errors",
              "reward_timeouts")  # fmt: skip
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


def no_completions(recipe: dict) -> str:
    """Why the run folder holds no completions, and what to do, as the run's recipe stands."""
    if recipe.get("log_completions") is True:
        return (
            "No completions log, although the run had `log_completions: true` (TRL writes "
            "completions/*.parquet at each logging step: did the run reach its first log?).\n"
        )
    if recipe.get("smoke") is True:
        return (
            "No completions log: offline runs (--smoke, --trial) turn `log_completions` off; "
            "add `--log_completions true` to the command to log them.\n"
        )
    return "No completions log (set `log_completions: true` in the recipe to get one).\n"


def completions_summary(run_dir: Path, names: list[str], recipe: dict | None = None) -> str:
    """Best and worst completion of each logged step (from log_completions' parquet files);
    `recipe`: the run's (its run record's), for the advice when there are none."""
    import pyarrow.parquet as pq

    files = sorted((run_dir / "completions").glob("completions_*.parquet"))
    if not files:
        return no_completions(recipe or {})
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
            prompt = markdown_code(_text(row.get("prompt"), 160))
            parts.append(f"- **{label}** ({scores}): prompt: {prompt}")
            parts.append(f"  completion: {markdown_code(_text(row.get('completion')))}")
        parts.append("")
    return "\n".join(parts)


def run_record(run_dir: Path) -> dict:
    """The run's run_record.json ({} when the folder has none, or it is not readable)."""
    path = run_dir / RECORD
    if not path.is_file():
        return {}
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def limits_for(run_dir: Path, task) -> HealthLimits:
    """The health thresholds the run used (from its run record), else the defaults."""
    import dataclasses

    values = run_record(run_dir).get("recipe")
    if not isinstance(values, dict):
        return default_limits()
    names = {f.name for f in dataclasses.fields(ScriptArguments)}
    script = ScriptArguments(**{k: v for k, v in values.items() if k in names})
    correctness = task.correctness
    model = values.get("model_name_or_path")  # a warm-up's merged model: its record says so
    return limits_from(
        script,
        beta=values.get("beta") or 0.0,
        max_completion_length=values.get("max_completion_length") or 0,
        correctness=correctness if correctness in script.reward_funcs else None,
        max_tool_calling_iterations=values.get("max_tool_calling_iterations"),
        fp16=bool(values.get("fp16")),
        warmup=warmup_origin(run_record_of(model)) if model else None,
    )


def report(argv: Sequence[str] | None = None) -> Path:
    args = parse_args(argv)
    run_dir = args.run_dir
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such run folder (train first, or pass the output_dir)")
    state_path = find_state(run_dir)
    state = json.loads(state_path.read_text(encoding="utf-8"))
    history = state.get("log_history", [])
    rows = training_rows(history)
    if not rows:
        raise UserError(f"{state_path}: no training logs yet (logging_steps may exceed the steps)")
    evaluated = evaluation_rows(history)
    out = args.output_dir or run_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    names = reward_names(rows)
    from ..project import load as load_project

    task = load_project().task
    record = run_record(run_dir)
    limits = limits_for(run_dir, task)
    images = plot(rows, out, names, evaluated)
    extra = (
        plot_evaluation(rows, evaluated, out, task.correctness),
        plot_tools(rows, out, limits),
    )
    images += [image for image in extra if image is not None]
    evaluation = ["## Evaluation during training\n\n" + evaluation_summary(evaluated, record)]
    tools = ["## Tool use\n\n" + tool_summary(rows, limits)] if uses_tools(rows) else []
    summary = "\n\n".join(
        [
            f"# Training report: {run_dir}",
            f"{len(rows)} logged steps, last step {rows[-1]['step']} (from `{state_path}`).",
            "## Metrics\n\n" + metric_table(rows),
            *(evaluation if evaluated else []),
            *tools,
            "## Health\n\n" + health_section(run_dir, rows, limits),
            "## Plots\n\n" + "\n".join(f"![{p.stem}]({p.name})" for p in images),
            "## Completions\n\n" + completions_summary(run_dir, names, record.get("recipe")),
        ]
    )
    (out / "report.md").write_text(summary + "\n", encoding="utf-8")
    print(f"report written to {out / 'report.md'} ({len(images)} plots)")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    return run(report, argv)
