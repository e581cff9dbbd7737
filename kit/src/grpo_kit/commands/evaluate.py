"""`grpo evaluate` (`make evaluate`): the task's metric on held-out prompts, for the base model and
the trained one.

    make evaluate                                       # the recipe's base vs its output_dir
    make evaluate ARGS="--model outputs/<run>/merged --limit 200"
    make evaluate ARGS="--pass-k 4"                     # also sample 4 per prompt: pass@4
    make evaluate ARGS="--greedy"                       # greedy decoding for the metrics
    make evaluate ARGS="--smoke"                        # tiny model, sample data, offline
    make evaluate ARGS="--all-rows"                     # every row, trained ones too: NOT held out

The metric is the task's own (accuracy, test pass rate, schema validity and field F1, label
accuracy), computed by the same reward functions training uses, on one completion per prompt;
beside it, format compliance: the share of completions at the top of each format reward of the
recipe. The base model is `--base`, else the model the run trained from (its run record, found
in the run's folder for a checkpoint-N or merged folder too: a `make try` run is compared with
its own model, offline), else the recipe's. Completions are decoded with the model card's
recommended sampling when the model is the project's own ([tool.grpo] recommended_sampling),
with another model's own generation_config.json sampling, else greedily (`--greedy`,
`--temperature/--top-p/--top-k` change it). `--pass-k K` adds pass@K: the share of prompts
where at least one of K sampled completions is fully right. Sampling is seeded (`--seed`), so a
rerun gives the same numbers on the same machine. The report says whether the prompts were held
out (compared with the run record's training data, else the recipe's own). Writes
`predictions.jsonl`, `report.md` (the before/after tables, naming the decoding) and
`summary.json` to `--output-dir` (default: `<model>/eval`).

The rows are held out by default (`grpo_kit.heldout`): the dataset's test split when it has one,
else the rows of the data (a single file) that the warm-up, training, the filter and the
preflight never see, chosen by a hash of each problem; evaluate says which, and the run record
keeps it, so the report calls the same file's held-out rows held out when the run record says
training held them out. `--all-rows` scores every row instead, training rows included. An
offline run (`make try`, `make smoke`) is scored on the data it trained on when the recipe
names other data (a fresh project's recipe names the task's Hub dataset; the trial read the
shipped sample), said in one line; `--dataset_name` chooses.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

from ..errors import UserError
from ..generation import (
    MODEL_HINT,
    Decoding,
    add_decoding_options,
    check_model,
    decoding_from,
    load_model_for_inference,
    load_tokenizer_for,
    origin_of,
    run_record_of,
    stands_for,
    trained_from,
)
from ..project import Project
from ..project import load as load_project
from ..recipe import add_recipe_options, recipe_from
from ..runner import run
from ..sampling import decoding_settings, training_settings

logger = logging.getLogger(__name__)


def parse_args(argv: Sequence[str] | None, project: Project):
    parser = argparse.ArgumentParser(
        prog="grpo evaluate",
        description="Task metric on held-out prompts: base model vs trained model.",
        epilog="Other options are recipe overrides, e.g. --dataset_name data/my_eval.jsonl.",
    )
    parser.add_argument("--model", type=Path, help="trained model: output_dir, adapter or merged")
    parser.add_argument(
        "--base",
        help="base model (default: the one the run trained from, per its run record; else the "
        "recipe's model_name_or_path)",
    )
    parser.add_argument("--no-base", action="store_true", help="evaluate the trained model only")
    parser.add_argument("--split", help="dataset split (default: the recipe's dataset_test_split)")
    parser.add_argument("--limit", type=int, default=100, help="prompts to use (default 100)")
    parser.add_argument(
        "--all-rows",
        action="store_true",
        help="score every row of the data, training rows included: NOT held out (default: the "
        "dataset's test split, or the rows of a single file held out of training)",
    )
    parser.add_argument(
        "--pass-k",
        type=int,
        default=1,
        help="also sample K per prompt: pass@K (with the decoding when it samples; else with "
        "the model card's sampling, or the recipe's rollout sampling when it has none)",
    )
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    parser.add_argument("--max-new-tokens", type=int, help="default: max_completion_length")
    parser.add_argument("--batch-size", type=int, default=8, help="prompts per generate call")
    parser.add_argument("--output-dir", type=Path, help="default: <model>/eval")
    add_decoding_options(parser, project)
    add_recipe_options(parser)
    args, overrides = parser.parse_known_args(argv)
    if args.pass_k < 1 or args.limit < 1:
        parser.error("--pass-k and --limit must be at least 1")
    return args, overrides


def evaluation_rows(
    recipe, split: str | None, limit: int, model: str | None = None, all_rows: bool = False
) -> tuple[list[dict], str]:
    """(held-out rows as chat prompts with the columns the metric rewards read, rendered with
    the tokenizer of `model` (default: the recipe's), where they come from): the first `limit`
    of `heldout.evaluation_rows` (every row with `all_rows`)."""
    from .. import data, heldout
    from ..tokenizer import load_tokenizer

    script_args, task_args, task = recipe.script, recipe.task, recipe.project.task
    rows, rows_from = heldout.evaluation_rows(script_args, task_args, task, split, all_rows)
    rows = rows.select(range(min(limit, len(rows))))
    name = model or recipe.model.model_name_or_path
    revision = recipe.model.model_revision if name == recipe.model.model_name_or_path else None
    source = SimpleNamespace(model_name_or_path=name, model_revision=revision)
    tokenizer = load_tokenizer(source, recipe.training.trust_remote_code)
    kwargs = recipe.training.chat_template_kwargs
    rows, _ = data.prepare(rows, tokenizer, script_args, task_args, task, kwargs)
    return [dict(row) for row in rows], rows_from


def held_out(
    recipe,
    split: str | None,
    trained: Path,
    training_data: tuple[str, str] | None = None,
    all_rows: bool = False,
) -> bool:
    """Whether the evaluated rows are none the model trained on: other data than the run
    record's (in `trained`, or the run folder above a checkpoint-N or merged folder), else than
    `training_data` (the recipe's own (dataset_name, train split), before command-line
    overrides), else than the recipe's; or the same data's held-out rows, which the run record
    says training held out (`held_out`, heldout.py: a run of an older kit trained on them).
    `all_rows`: every row of the same data is evaluated, the trained ones too."""
    from ..data import is_local

    record = run_record_of(trained) or {}
    train = record.get("recipe", {})
    own = training_data or (recipe.script.dataset_name, recipe.script.dataset_train_split)
    train_data = train.get("dataset_name", own[0])
    train_split = train.get("dataset_train_split", own[1])
    data, split = recipe.script.dataset_name, split or recipe.script.dataset_test_split
    if data != train_data:
        return True
    if not is_local(data) and split != train_split:
        return True
    return not all_rows and (record.get("held_out") or {}).get("by") == "hash"


def offline_run_data(trained: Path, recipe, args, overrides: Sequence[str]) -> list[str]:
    """Recipe overrides naming the data an offline run (`make try`, `make smoke`: its run record
    says `smoke`) trained on, when evaluate was given neither an offline flag nor data of its own
    and the recipe names other data: a fresh project's `make evaluate RUN_DIR=outputs/trial`
    then scores the sample's held-out rows the trial trained beside, instead of reaching for the
    Hub dataset the recipe names. Empty otherwise."""
    from ..recipe import DATA_FIELDS

    record = run_record_of(trained) or {}
    trained_on = record.get("recipe") or {}
    if (
        not trained_on.get("smoke")
        or getattr(args, "smoke", False)
        or getattr(args, "trial", False)
    ):
        return []
    if any(arg.split("=", 1)[0] == f"--{field}" for arg in overrides for field in DATA_FIELDS):
        return []  # the user's own data for this evaluation
    if trained_on.get("dataset_name") in (None, recipe.script.dataset_name):
        return []
    from ..data import is_local

    gone = trained_on["dataset_name"]
    if is_local(gone) and not Path(gone).exists():
        raise UserError(
            f"{trained} is an offline run on {gone} (its run record), which is no longer here "
            "(a task switch, or a file removed): evaluate it with --dataset_name <data>, or "
            "evaluate a run of the project as it is now (make try, make smoke)"
        )
    found = []
    for field in DATA_FIELDS:
        value = trained_on.get(field)
        if value is not None:
            found += [f"--{field}", str(value)]
    logger.info(
        "evaluating the data %s trained on (%s), not the recipe's %s: it was an offline run "
        "(make try or make smoke); --dataset_name chooses other data",
        trained, trained_on["dataset_name"], recipe.script.dataset_name,
    )  # fmt: skip
    return found


def base_model(args, recipe, trained: Path) -> tuple[str, str]:
    """(the base model to compare with, where that choice comes from)."""
    if args.base:
        return args.base, "--base"
    parent = trained_from(trained)
    if parent is not None:
        return parent, "the model the run trained from, per its run record"
    return recipe.model.model_name_or_path, "the recipe's model_name_or_path"


def format_functions(recipe):
    """(name, reward) of the recipe's format rewards (Reward.kind "format"), settings bound."""
    from ..rewards import bind

    task = recipe.project.task
    kinds = {r.name: r for r in task.rewards if r.kind == "format"}
    settings = recipe.reward_settings()
    return [
        (name, bind(kinds[name].func, settings))
        for name in recipe.script.reward_funcs
        if name in kinds
    ]


def metric_functions(task, settings: dict):
    """(label, reward) of the task's metrics, with the recipe settings they take bound."""
    from ..rewards import bind

    if not task.metrics:
        raise UserError(f"the {task.name} task lists no metrics (Task.metrics in task.py)")
    return [(label, bind(func, settings)) for label, func in task.metrics]


ROLLOUT_SAMPLING = "the recipe's rollout sampling (temperature, top_p, top_k, generation_kwargs)"
CALLS = "calls per episode"  # an agent task's extra figure (not a reward: no pass@K)


def pass_k_sampling(decoding: Decoding, recipe, model: str | None = None) -> Decoding:
    """What pass@K samples with: the metrics' decoding when it samples; when it is greedy, the
    model's own sampling (`Decoding.for_model`: the card's for the project's model), else the
    recipe's rollout sampling (what GRPO explores with)."""
    if not decoding.greedy:
        return decoding
    training = recipe.training
    rollouts = Decoding(
        training.temperature, training.top_p, training.top_k or 0, source=ROLLOUT_SAMPLING
    )
    own = Decoding.for_model(recipe.project, model)
    return rollouts if own.greedy else own


def completions_for(model_path, rows, args, settings: dict, samples: int = 1) -> list[list]:
    """`samples` completions per row, generated with `settings` (sampling.py: a decoding's, or
    the recipe's rollout sampling), from the seed, with a progress bar; an agent task's are
    whole rollouts through the loop TRL trains with, its tools really called."""
    from transformers import set_seed

    from .. import sampling

    tokenizer = load_tokenizer_for(Path(model_path))
    model = load_model_for_inference(Path(model_path))
    set_seed(args.seed)  # each model and pass starts from the same seed: reruns repeat
    what = f"{samples} sampled" if settings.get("do_sample") else "greedy"
    label = f"{Path(str(model_path)).name}: {what}"
    kwargs, size = args.chat_template_kwargs, args.batch_size
    if args.agent is not None:
        factories, max_iterations = args.agent
        sampler = sampling.agent_sampler(
            model, tokenizer, settings, rows, factories, max_iterations, kwargs,
            batch_size=size, progress=label,
        )  # fmt: skip
    else:
        sampler = sampling.transformers_sampler(
            model, tokenizer, settings, kwargs, batch_size=size, progress=label
        )
    return [sampling.texts(group) for group in sampler([row["prompt"] for row in rows], samples)]


def score(metrics, completions: list[str], rows: list[dict]) -> dict[str, list[float | None]]:
    from ..rewards import call_like_trl

    return {label: call_like_trl(func, completions, rows) for label, func in metrics}


def mean(values) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def at_top(func, values) -> float | None:
    """The share of scored completions at the top of the reward's range."""
    top = func.reward_range.high if hasattr(func, "reward_range") else 1.0
    present = [v for v in values if v is not None]
    return sum(v >= top - 1e-9 for v in present) / len(present) if present else None


def evaluate_model(model_path, rows, metrics, args, max_new_tokens) -> tuple[dict, list[dict]]:
    """Summary {metric: value} and one prediction per row; the format rewards' compliance goes
    to `args.format_results[model_path]`."""
    settings = decoding_settings(args.decoding, max_new_tokens)
    decoded = completions_for(model_path, rows, args, settings)
    firsts = [c[0] for c in decoded]
    scores = score(metrics, firsts, rows)
    summary = {label: mean(values) for label, values in scores.items()}
    formats = getattr(args, "formats", [])
    format_scores = score(formats, firsts, rows)
    if formats:
        args.format_results[str(model_path)] = {
            name: at_top(func, format_scores[name]) for name, func in formats
        }
    if args.agent is not None:  # tool calls per episode, beside the metrics
        from ..environments import rollout_calls

        scores[CALLS] = [float(len(rollout_calls(rollout))) for rollout in firsts]
        summary[CALLS] = mean(scores[CALLS])
    predictions = [
        {"prompt": row["prompt"][-1]["content"], "answer": row.get("answer"), "completion": text,
         **{label: scores[label][i] for label in scores},
         **{name: format_scores[name][i] for name in format_scores}}
        for i, (row, text) in enumerate(zip(rows, firsts, strict=True))
    ]  # fmt: skip
    if args.pass_k > 1:
        label, func = metrics[0]
        top = func.reward_range.high if hasattr(func, "reward_range") else 1.0
        sampled = completions_for(model_path, rows, args, args.pass_k_settings, args.pass_k)
        solved = []
        for row, texts in zip(rows, sampled, strict=True):
            values = score([(label, func)], texts, [row] * len(texts))[label]
            solved.append(float(any(v is not None and v >= top - 1e-9 for v in values)))
        summary[f"pass@{args.pass_k}"] = mean(solved)
        for prediction, value in zip(predictions, solved, strict=True):
            prediction[f"pass@{args.pass_k}"] = value
    return summary, predictions


def report_table(results: dict[str, dict], rows: int, args) -> str:
    names = list(results)
    metrics = list(next(iter(results.values())))
    how = "greedy" if args.decoding.greedy else "sampled"
    header = ["metric", *names] + (["change"] if len(names) == 2 else [])
    lines = ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
    for metric in metrics:
        values = [results[name].get(metric) for name in names]
        cells = [f"{v:.3f}" if v is not None else "n/a" for v in values]
        if len(values) == 2:
            both = None not in values
            cells.append(f"{values[1] - values[0]:+.3f}" if both else "n/a")
        label = metric if metric.startswith("pass@") else f"{metric} ({how})"
        lines.append("| " + " | ".join([label, *cells]) + " |")
    rows_from = getattr(args, "rows_from", "")
    notes = [f"{rows} held-out prompts" + (f" from {rows_from}" if rows_from else "")]
    if not args.held_out:
        notes = [
            f"{rows} prompts of the TRAINING data (not held out: pass held-out data with "
            "--dataset_name FILE, or a Hub split with --split)"
        ]
    if getattr(args, "held_out_note", ""):
        notes[0] += f" ({args.held_out_note})"
    if getattr(args, "base_note", ""):
        notes.append(f"base: {args.base_note}")
    notes.append(f"metrics decoded: {decoding_note(args.decoding, args.seed, args.project)}")
    if args.pass_k > 1:
        pass_k = decoding_note(args.pass_k_decoding, args.seed, args.project)
        notes.append(f"pass@{args.pass_k}: {args.pass_k} completions per prompt, {pass_k}")
    return "\n".join(lines) + "\n\n" + "".join(f"- {note}\n" for note in notes)


def format_table(results: dict[str, dict[str, float | None]]) -> str:
    """Format compliance per model: the share of completions at the top of each format reward."""
    names = list(results)
    rewards = list(next(iter(results.values())))
    header = ["format reward", *names] + (["change"] if len(names) == 2 else [])
    lines = ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
    for name in rewards:
        values = [results[model].get(name) for model in names]
        cells = [f"{v:.3f}" if v is not None else "n/a" for v in values]
        if len(values) == 2:
            cells.append(f"{values[1] - values[0]:+.3f}" if None not in values else "n/a")
        lines.append("| " + " | ".join([name, *cells]) + " |")
    return (
        "\n".join(lines) + "\n\n- format: the share of completions at the top of each "
        "format reward of the recipe\n"
    )


def decoding_note(decoding: Decoding, seed: int, project: Project) -> str:
    """How a report's completions were decoded (and where that decoding comes from), with what
    makes them repeatable."""
    if decoding.source:
        source = f" ({decoding.source.removeprefix('greedy: ')})"
        source = "" if decoding.source == "greedy: --greedy" else source
    else:  # a decoding built without a source: the card's when it has the card's values
        source = (
            " (the model card's recommendation)"
            if decoding == Decoding.recommended(project)
            else ""
        )
    seeded = "" if decoding.greedy else f", seed {seed}"
    return f"{decoding.describe()}{source}{seeded}"


def evaluate(argv: Sequence[str] | None = None) -> dict[str, dict]:
    from ..generation import configure_cpu_threads
    from ..recipe import recipe_from as parse
    from ..training import ensure_offline_model

    project = load_project()
    task = project.task
    args, overrides = parse_args(argv, project)
    recipe = recipe_from(args, overrides, read_only=True, project=project)
    args.project = project
    args.chat_template_kwargs = recipe.training.chat_template_kwargs  # as TRL renders prompts
    trained = Path(args.model or recipe.training.output_dir)
    run_data = offline_run_data(trained, recipe, args, overrides)
    if run_data:
        recipe = recipe_from(args, [*overrides, *run_data], read_only=True, project=project)
    if args.model and not trained.exists() and trained.name == "merged":
        check_model(args.model)  # outputs/<run>/merged before merging: `make merge` first
    if not trained.exists():
        raise UserError(
            f"{trained}: no trained model here: train first (make train, or make try for a CPU "
            f"trial), or {MODEL_HINT}"
        )
    ensure_offline_model(recipe)  # --smoke: the tiny model, built on first use
    models: dict[str, str] = {}
    args.base_note = ""
    if not args.no_base:
        models["base"], why = base_model(args, recipe, trained)
        hub_id = stands_for(origin_of(models["base"]))  # the real model built offline
        built = f"; {hub_id}, built offline" if hub_id else ""
        args.base_note = f"`{models['base']}` ({why}{built})"
    models["trained"] = str(trained)
    args.decoding = decoding_from(args, project, models.get("base", str(trained)))
    args.agent = None  # an agent task: (environment factories, tool-calling turn cap)
    if task.environments is not None:
        cap = recipe.training.max_tool_calling_iterations
        args.agent = (task.environments(recipe.task), cap)
    origin = origin_of(models.get("base", str(trained)))
    args.pass_k_decoding = (
        pass_k_sampling(args.decoding, recipe, origin) if args.pass_k > 1 else None
    )
    logger.info("decoding: %s", decoding_note(args.decoding, args.seed, project))
    max_new_tokens = args.max_new_tokens or recipe.training.max_completion_length
    args.pass_k_settings = (  # the recipe's rollout sampling is training's, whole (sampling.py)
        training_settings(recipe, max_new_tokens=max_new_tokens)
        if args.pass_k_decoding is not None and args.pass_k_decoding.source == ROLLOUT_SAMPLING
        else decoding_settings(args.pass_k_decoding or args.decoding, max_new_tokens)
    )
    settings = {**recipe.reward_settings(), "max_completion_length": max_new_tokens}
    metrics = metric_functions(task, settings)
    args.formats = format_functions(recipe)
    args.format_results = {}
    own = None
    args.held_out_note = "compared with the run record's training data"
    if run_record_of(trained) is None:  # the recipe's own data, without the command line's
        mine = parse(args, [], read_only=True, project=project).script
        own = (mine.dataset_name, mine.dataset_train_split)
        args.held_out_note = (
            f"no run record in {trained} or its run folder: compared with the recipe's "
            f"training data, {own[0]}"
        )
    args.held_out = held_out(recipe, args.split, trained, own, args.all_rows)
    if not args.held_out:
        logger.warning(
            "evaluating on the data the model trained on (%s): the scores are not held out; "
            "pass held-out data with --dataset_name FILE (or --split for a Hub dataset)",
            recipe.script.dataset_name,
        )
    configure_cpu_threads()
    base = models.get("base", str(trained))
    rows, args.rows_from = evaluation_rows(recipe, args.split, args.limit, base, args.all_rows)
    held = "held-out " if args.held_out else ""
    print(f"evaluating on {len(rows)} {held}rows from {args.rows_from}", flush=True)
    results, predictions = {}, []
    for name, path in models.items():
        logger.info("evaluating %s (%s) on %d prompts", name, path, len(rows))
        results[name], rows_out = evaluate_model(path, rows, metrics, args, max_new_tokens)
        predictions += [{"model": name, **p} for p in rows_out]
    out = args.output_dir or trained / "eval"
    out.mkdir(parents=True, exist_ok=True)
    with (out / "predictions.jsonl").open("w", encoding="utf-8") as handle:
        for prediction in predictions:
            handle.write(json.dumps(prediction, default=str) + "\n")
    table = report_table(results, len(rows), args)
    formats = {name: args.format_results[path] for name, path in models.items()
               if path in args.format_results}  # fmt: skip
    if formats:
        table += "\n" + format_table(formats)
    title = f"# Evaluation: {task.name} task\n\n" + "\n".join(
        f"- {name}: `{path}`" for name, path in models.items()
    )
    (out / "report.md").write_text(f"{title}\n\n{table}", encoding="utf-8")
    summary = {"models": models, "prompts": len(rows), "held_out": args.held_out,
               "rows_from": args.rows_from,
               "decoding": decoding_note(args.decoding, args.seed, project),
               "metrics": results, "format": formats}  # fmt: skip
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(table)
    print(f"predictions and report written to {out}")
    return results


def main(argv: Sequence[str] | None = None) -> int:
    return run(evaluate, argv)
