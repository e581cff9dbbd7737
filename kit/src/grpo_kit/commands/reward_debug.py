"""`grpo reward-debug` (`make reward-debug`): score every reward of the recipe on sample
completions before training, one table per reward.

    grpo reward-debug
    grpo reward-debug --data data/mine.csv
    grpo reward-debug --completions mine.jsonl

The rows are the recipe's data (configs/local.yaml: yours, read with your columns and labels),
or the shipped sample with its own columns while the recipe still names the task's default data
(which would need the Hub); `--data FILE` names another file, read with the recipe's columns.
Without `--completions`, each data row's ideal completion (the task's gold answer written in the
expected format) is scored, and the command fails unless every reward gives every ideal
completion the top of its range: a reward that cannot be maxed by a perfect answer is a bug.
With `--completions FILE.jsonl` (lines `{"completion": "...", "row": 3}`; `row` indexes the data
and defaults to the line number) it scores your completions, e.g. ones sampled from the model;
a line may carry reference scores you wrote from the rubric, `"reference": {"<reward>": 0.8}`
(on the reward's range), and each reward with references gets an agreement table (how often it
orders two completions as the references do, its distance from them: `rewards.judge.agreement`).
An agent task's completion is a whole rollout (a list of assistant and tool messages, as
`make evaluate` writes them); its ideal rollouts' tool calls are really executed, and one
transcript per environment is printed.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import data, rewards
from ..errors import UserError
from ..project import load as load_project
from ..recipe import DEFAULT_RECIPE, SMOKE_OVERRIDES, parse_recipe
from ..rewards.judge import is_judge
from ..runner import run
from ..text import for_terminal


@dataclass(frozen=True)
class Scores:
    name: str
    low: float
    high: float
    values: list[float | None]
    judged: bool = False  # a judge model's grades: an opinion, not held to the top

    @property
    def applicable(self) -> list[float]:
        return [v for v in self.values if v is not None]


def parse_args(argv: Sequence[str] | None):
    parser = argparse.ArgumentParser(
        prog="grpo reward-debug",
        description="Score the recipe's rewards on ideal or given completions.",
        epilog="Other options are recipe overrides, e.g. --reward_model outputs/reward-model.",
    )
    parser.add_argument("--config", type=Path, default=DEFAULT_RECIPE, help="the recipe")
    parser.add_argument(
        "--data",
        default=None,
        help="dataset or file with the rows, read with the recipe's columns (default: the "
        "recipe's data; the task's sample, with its own columns, while the recipe names the "
        "task's default data)",
    )
    parser.add_argument("--completions", type=Path, help="JSONL of completions to score")
    parser.add_argument("--limit", type=int, default=8, help="rows shown per table (default 8)")
    parser.add_argument("--max-rows", type=int, default=64, help="rows scored (default 64)")
    return parser.parse_known_args(argv)


def load_completions(path: Path, rows: int) -> list[tuple[int, object]]:
    """(row index, completion) pairs from a JSONL file."""
    return [(row, completion) for row, completion, _ in load_labelled(path, rows)]


def load_labelled(path: Path, rows: int) -> list[tuple[int, object, dict[str, float]]]:
    """(row index, completion, reference scores by reward name) from a JSONL file."""
    if not path.is_file():
        raise UserError(f"{path}: file not found")
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as err:
            raise UserError(f"{path} line {number + 1}: invalid JSON ({err.msg})") from err
        if not isinstance(item, dict) or not isinstance(item.get("completion"), str | list):
            raise UserError(
                f"{path} line {number + 1}: needs a 'completion' (a text, or an agent's list of "
                "messages)"
            )
        row = int(item.get("row", number))
        if not 0 <= row < rows:
            raise UserError(
                f"{path} line {number + 1}: row {row} is outside the data (0-{rows - 1})"
            )
        reference = item.get("reference", {})
        if not isinstance(reference, dict) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            for v in reference.values()
        ):
            raise UserError(
                f"{path} line {number + 1}: 'reference' must map reward names to numbers, e.g. "
                '{"helpfulness": 0.8}'
            )
        pairs.append((row, item["completion"], {str(k): float(v) for k, v in reference.items()}))
    if not pairs:
        raise UserError(f"{path}: no completions")
    return pairs


def score(recipe, rows, pairs: list[tuple[int, object]]) -> list[Scores]:
    """Call each reward as GRPOTrainer would, on the given (row, completion) pairs."""
    chosen = [rows[i] for i, _ in pairs]
    texts = [text for _, text in pairs]
    results = []
    names = recipe.script.reward_funcs
    table, settings = recipe.project.task.reward_table, recipe.reward_settings()
    for name, func in zip(names, rewards.resolve(names, table, settings), strict=True):
        values = rewards.call_like_trl(func, texts, chosen)
        bounds = getattr(func, "reward_range", None)
        low, high = (bounds.low, bounds.high) if bounds else (float("-inf"), float("inf"))
        results.append(Scores(name, low, high, list(values), judged=is_judge(func)))
    if recipe.script.reward_model:  # scored beside the functions, as GRPOTrainer does
        from ..generation import check_model
        from .reward_model import score_pairs

        model = recipe.script.reward_model
        check_model(model, "--reward_model")  # a folder that holds none: one line, not the Hub's
        values = score_pairs(model, [row["prompt"] for row in chosen], texts)
        name = model.rstrip("/").split("/")[-1]
        results.append(Scores(name, float("-inf"), float("inf"), values))
    return results


def one_line(completion) -> str:
    """A completion on one line: its text, or an agent rollout's turns (calls, results, text)."""
    if isinstance(completion, str):
        return completion.replace("\n", " ")
    parts = []
    for message in completion:
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            parts.append(f"{function.get('name')}({json.dumps(function.get('arguments'))})")
        content = str(message.get("content") or "").replace("\n", " ")
        if message.get("role") == "tool":
            parts.append(f"-> {content}")
        elif content:
            parts.append(content)
    return " | ".join(parts)


def print_transcripts(rows, pairs) -> None:
    """The whole multi-turn exchange of one rollout per environment (agent tasks): the prompt's
    last message, each tool call with its arguments, each tool result, the final answer."""
    from rich.console import Console
    from rich.markup import escape
    from rich.panel import Panel

    console, shown = Console(), set()
    for index, completion in pairs:
        environment = rows[index].get("environment")
        if isinstance(completion, str) or environment in shown:
            continue
        shown.add(environment)
        lines = [f"[bold]user[/bold]: {escape(rows[index]['prompt'][-1]['content'])}"]
        for message in completion:
            for call in message.get("tool_calls") or []:
                function = call.get("function", {})
                arguments = escape(json.dumps(function.get("arguments"), ensure_ascii=False))
                name = escape(str(function.get("name")))
                lines.append(f"[bold]assistant calls[/bold] {name}({arguments})")
            content = escape(str(message.get("content") or ""))
            if message.get("role") == "tool":
                lines.append(f"[bold]tool {escape(str(message.get('name')))}[/bold] -> {content}")
            elif content:
                lines.append(f"[bold]assistant[/bold]: {content}")
        title = f"rollout of row {index} (environment {environment})"
        shown_text = for_terminal("\n".join(lines))  # no terminal escapes from model text
        console.print(Panel(shown_text, title=title, expand=False), markup=True)


def report(results: list[Scores], pairs, limit: int, ideal: bool) -> bool:
    """Print the tables; True when (for ideal completions) every reward reached its top."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    ok = True
    for result in results:
        table = Table(title=f"{escape(result.name)}  (range {result.low:g} .. {result.high:g})")
        table.add_column("row", justify="right")
        table.add_column("score", justify="right")
        table.add_column("completion")
        for (row, completion), value in list(zip(pairs, result.values, strict=True))[:limit]:
            shown = "n/a" if value is None else f"{value:.3f}"
            table.add_row(str(row), shown, escape(for_terminal(one_line(completion))[:90]))
        console.print(table)
    summary = Table(title="summary")
    for column in ("reward", "range", "min", "mean", "max", "n/a", "ideal at top"):
        summary.add_column(column)
    for result in results:
        values = result.applicable
        bounded = math.isfinite(result.high)  # a reward model's score has no top
        at_top = bounded and bool(values) and all(v == result.high for v in values)
        if ideal and bounded and not at_top and not result.judged:
            ok = False
        summary.add_row(
            escape(result.name),
            f"{result.low:g} .. {result.high:g}",
            f"{min(values):.3f}" if values else "-",
            f"{sum(values) / len(values):.3f}" if values else "-",
            f"{max(values):.3f}" if values else "-",
            str(len(result.values) - len(values)),
            "judge" if result.judged else ("yes" if at_top else "NO") if ideal and bounded else "-",
        )
    console.print(summary)
    return ok


def report_agreement(results: list[Scores], references: list[dict[str, float]]) -> None:
    """For each reward with reference scores, its agreement with them (`judge.agreement`)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from ..rewards.judge import agreement

    known = {result.name for result in results}
    unknown = sorted({name for reference in references for name in reference} - known)
    if unknown:
        raise UserError(
            f"reference scores for {unknown}, which the recipe does not score with; its rewards: "
            f"{sorted(known)}"
        )
    table = Table(title="agreement with the reference scores")
    table.add_column("reward", overflow="fold")
    for column in ("rows", "unscored", "pairs", "same order", "mean |diff|", "within"):
        table.add_column(column)
    for result in results:
        indexed = [(i, ref[result.name]) for i, ref in enumerate(references) if result.name in ref]
        if not indexed:
            continue
        outside = [v for _, v in indexed if not result.low <= v <= result.high]
        if outside:
            raise UserError(
                f"reference scores {outside[:3]} for {result.name} are outside its range "
                f"{result.low:g} .. {result.high:g}"
            )
        found = agreement(
            [result.values[i] for i, _ in indexed],
            [v for _, v in indexed],
            low=result.low,
            high=result.high,
        )
        percent = lambda x: "-" if x is None else f"{100 * x:.0f}%"  # noqa: E731
        table.add_row(
            escape(result.name),
            str(found.rows),
            str(found.unscored),
            str(found.pairs),
            percent(found.pairs_ordered),
            percent(found.mean_abs_error),
            f"{percent(found.within)} (±{100 * found.tolerance:.0f}%)",
        )
    Console().print(table)
    print(
        "reward-debug: 'same order' is the share of pairs the references rank differently that "
        "the reward ranks the same way (ties half; 50% is a coin): GRPO learns from the order "
        "within a group. 'mean |diff|' and 'within' are distances, as shares of the range.",
        flush=True,
    )


def rows_note(recipe, scored: int, available: int, max_rows: int) -> str:
    """Which rows are scored, and why more than a smoke run trains on."""
    limit = recipe.script.max_train_samples
    if scored < available:
        which = f"{scored} of its {available} rows (--max-rows {max_rows})"
    elif limit is not None:
        which = f"its first {scored} rows (max_train_samples {limit})"
    else:
        which = f"all its {scored} rows"
    return (
        f"reward-debug: scoring {which} of {recipe.script.dataset_name}: every row's ideal "
        "completion is checked, where a smoke run trains on the first "
        f"{SMOKE_OVERRIDES['max_train_samples']} only (its max_train_samples)"
    )


def debug_recipe(args, overrides: list[str], project):
    """The recipe reward-debug scores with: `--data FILE` read with the recipe's columns; else
    the recipe's own data, or the shipped sample (its own columns) while the recipe still names
    the task's default data (which would need the Hub)."""
    argv = ["--config", str(args.config), *overrides]
    if args.data is not None:
        argv += ["--dataset_name", str(args.data)]
        return parse_recipe(argv, read_only=True, project=project)
    return parse_recipe(argv, read_only=True, project=project, offline_data=True)


def debug(argv: Sequence[str] | None = None) -> bool:
    args, overrides = parse_args(argv)
    project = load_project()
    task = project.task
    recipe = debug_recipe(args, overrides, project)
    rows = data.load_training_rows(recipe.script, recipe.task, task)
    available = len(rows)
    rows = rows.select(range(min(args.max_rows, len(rows))))
    print(rows_note(recipe, len(rows), available, args.max_rows), flush=True)
    rows = data.to_conversations(rows, recipe.script, recipe.task, task)
    references: list[dict[str, float]] = []
    if args.completions:
        labelled = load_labelled(args.completions, len(rows))
        pairs = [(row, completion) for row, completion, _ in labelled]
        references = [reference for _, _, reference in labelled]
    else:
        pairs = [(i, task.ideal_completion(rows[i], recipe.task)) for i in range(len(rows))]
    print_transcripts(rows, pairs)
    results = score(recipe, rows, pairs)
    ok = report(results, pairs, args.limit, ideal=args.completions is None)
    if any(references):
        report_agreement(results, references)
    if not ok:
        raise UserError("an ideal completion did not reach the top of a reward's range (see NO)")
    golds = data.gold_problem(rows, recipe, recipe.script.dataset_name)
    if golds is not None:  # n/a rows are left out of the tables, so they looked fine
        if not recipe.script.allow_unreadable_golds:
            allow = "; allow_unreadable_golds: true if they are meant to be"
            raise UserError(golds[1] if golds[0] else golds[1] + allow)
        print(f"reward-debug: {golds[1]} (allowed by allow_unreadable_golds)", flush=True)
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    return run(debug, argv)
