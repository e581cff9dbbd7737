"""issue 29: a user's own data. A project per task whose configs/local.yaml names the user's file
with its own columns and its own label set / schema / answer style runs every offline command
the generated README lists, through `grpo` as `make` runs them: try, smoke, reward-debug, filter,
evaluate (after the try run and after the smoke run), report and infer. Each reads the user's data,
not the shipped sample checked against the user's settings (the failure the issue reports:
`data/sample_classification.jsonl row 1: label 'Business' is not in labels ['bug', 'feature',
'question']`), and the offline tiny model's tokenizer learns the user's data."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml
from conftest import RECIPE, STARTERS, make_project

TICKETS = [  # the CSV: ticket_id,text_body,category
    (101, "The export button crashes the app when the list is empty.", "bug"),
    (102, "Please add a dark mode to the settings page.", "feature"),
    (103, "How do I reset my password from the mobile app?", "question"),
    (104, "Saving a draft loses the attachments every time.", "bug"),
    (105, "It would be great to schedule reports weekly.", "feature"),
    (106, "Where can I find last month's invoices?", "question"),
    (107, "The search returns results from deleted projects.", "bug"),
    (108, "Could you support single sign-on with our provider?", "feature"),
]


def sample(name: str) -> list[dict]:
    path = STARTERS / "data" / name
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def own_math(root: Path) -> dict:
    """Plain numbers as answers (no GSM8K `####` reasoning), other column names."""
    from grpo_kit.verify.math import gold_text

    rows = [{"problem": r["question"], "final": gold_text(r["answer"])}
            for r in sample("sample_math.jsonl")[:8]]  # fmt: skip
    write_jsonl(root / "data" / "mine.jsonl", rows)
    return {"dataset_name": "data/mine.jsonl", "prompt_column": "problem", "answer_column": "final"}


def own_classification(root: Path) -> dict:
    with (root / "data" / "tickets.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["ticket_id", "text_body", "category"])
        writer.writerows(TICKETS)
    return {"dataset_name": "data/tickets.csv", "prompt_column": "text_body",
            "answer_column": "category", "labels": ["bug", "feature", "question"]}  # fmt: skip


def own_json(root: Path) -> dict:
    """Another schema (products, a number field), other column names, a plain-text request."""
    fields = {"product": {"type": "string"}, "price": {"type": "number"}}
    schema = json.dumps({"type": "object", "properties": fields, "required": list(fields)})
    items = [("kettle", 24.5), ("lamp", 31.0), ("chair", 89.99), ("mug", 7.25), ("desk", 240.0),
             ("pen", 1.5)]  # fmt: skip
    rows = [{"instruction": f"Extract the product and price: the {name} costs {price} euros.",
             "output": json.dumps({"product": name, "price": price}), "json_schema": schema}
            for name, price in items]  # fmt: skip
    write_jsonl(root / "data" / "products.jsonl", rows)
    return {"dataset_name": "data/products.jsonl", "prompt_column": "instruction",
            "answer_column": "output", "schema_column": "json_schema"}  # fmt: skip


def own_code(root: Path) -> dict:
    rows = [{"task": r["text"], "tests": r["test_list"], "reference": r["code"]}
            for r in sample("sample_code.jsonl")[:6]]  # fmt: skip
    write_jsonl(root / "data" / "problems.jsonl", rows)
    # Reference solutions run long: room for them (the kit's test recipe allows 64 tokens).
    return {"dataset_name": "data/problems.jsonl", "prompt_column": "task",
            "answer_column": "tests", "solution_column": "reference", "setup_column": None,
            "max_completion_length": 1024}  # fmt: skip


def own_custom(root: Path) -> dict:
    rows = [{"ask": r["question"], "reply": r["answer"]} for r in sample("sample_custom.jsonl")[:8]]
    write_jsonl(root / "data" / "facts.jsonl", rows)
    return {"dataset_name": "data/facts.jsonl", "prompt_column": "ask", "answer_column": "reply"}


def own_tools(root: Path) -> dict:
    rows = [{"query": r["question"], "gold": r["answer"], "env": r["environment"],
             "calls": r["ideal_calls"]} for r in sample("sample_tools.jsonl")[:6]]  # fmt: skip
    write_jsonl(root / "data" / "agent.jsonl", rows)
    return {"dataset_name": "data/agent.jsonl", "prompt_column": "query", "answer_column": "gold",
            "environment_column": "env", "ideal_calls_column": "calls"}  # fmt: skip


OWN_DATA = {
    "math": own_math,
    "classification": own_classification,
    "json": own_json,
    "code": own_code,
    "custom": own_custom,
    "tools": own_tools,
}


def grpo(*argv: str) -> int:
    """`python -m grpo_kit ...` as the Makefile runs it, in this process."""
    from grpo_kit.cli import main

    return main(list(argv))


@pytest.mark.slow
@pytest.mark.parametrize("task", list(OWN_DATA))
def test_every_offline_command_reads_your_own_data(task, tmp_path, monkeypatch, capsys):
    root = make_project(tmp_path / "project", task)
    monkeypatch.chdir(root)
    mine = OWN_DATA[task](root)
    (root / "configs" / "local.yaml").write_text(yaml.safe_dump(mine), encoding="utf-8")
    config = ["--config", RECIPE]
    fast = ["--max-new-tokens", "8", "--limit", "2"]

    # make try (one step: the trial's other settings as they are)
    assert grpo("train", *config, "--trial", "--max_steps", "1") == 0
    record = json.loads((root / "outputs/trial/run_record.json").read_text())
    assert record["recipe"]["dataset_name"] == mine["dataset_name"]
    stamp = root / "outputs/tiny-model/tokenizer_data.txt"
    assert Path(stamp.read_text()).resolve() == (root / mine["dataset_name"]).resolve()
    # make smoke: your data too, with your columns and labels (it read the sample before)
    assert grpo("smoke", *config) == 0
    printed = capsys.readouterr().out
    assert f"your data {mine['dataset_name']}" in printed
    record = json.loads((root / "outputs/smoke/run_record.json").read_text())
    assert record["recipe"]["dataset_name"] == mine["dataset_name"]
    assert record["recipe"]["prompt_column"] == mine["prompt_column"]
    # make reward-debug: every ideal completion of your rows at the top of every reward
    assert grpo("reward-debug", *config) == 0
    assert f"rows of {mine['dataset_name']}:" in capsys.readouterr().out
    # make filter ARGS="--smoke --min 0 ..."
    assert grpo("filter", *config, "--smoke", "--min", "0", "--k", "2", *fast) == 0
    rates = (root / "outputs/smoke/filter/pass_rates.jsonl").read_text().splitlines()
    assert len(rates) == 2
    # make evaluate after the try run (--trial: its tiny base model, no Hub) and after smoke
    assert grpo("evaluate", *config, "--trial", "--model", "outputs/trial", *fast) == 0
    assert grpo("evaluate", *config, "--smoke", *fast) == 0
    predictions = (root / "outputs/smoke/eval/predictions.jsonl").read_text()
    if task == "classification":
        assert "Labels: bug, feature, question" in predictions
    # make report SMOKE=1, make infer SMOKE=1
    assert grpo("report", "outputs/smoke", *config, "--smoke") == 0
    assert (root / "outputs/smoke/report").is_dir()
    assert grpo("infer", "--prompt", "Hello", *config, "--smoke", "--max-new-tokens", "8") == 0


def test_the_tiny_models_tokenizer_learns_the_data_the_run_reads(tmp_path, monkeypatch):
    """The offline tiny model in outputs/tiny-model is built with a tokenizer trained on the data
    the offline run reads (your CSV here), and rebuilt when that data changes."""
    from grpo_kit.offline.tiny_model import TOKENIZER_DATA, build_tokenizer, ensure_tiny_model
    from grpo_kit.recipe import TINY_MODEL_DIR, parse_recipe, tokenizer_data
    from transformers import AutoTokenizer

    root = make_project(tmp_path / "project", "classification")
    monkeypatch.chdir(root)
    sample = root / "data" / "sample_classification.jsonl"
    # The task's default data (the Hub's AG News): the sample stands in for it.
    assert tokenizer_data(parse_recipe(["--config", RECIPE, "--trial"])) == sample
    local = root / "configs" / "local.yaml"
    local.write_text(yaml.safe_dump(own_classification(root)), encoding="utf-8")
    recipe = parse_recipe(["--config", RECIPE, "--smoke"])
    assert tokenizer_data(recipe) == root / "data" / "tickets.csv"
    ensure_tiny_model(recipe)
    model = root / TINY_MODEL_DIR
    assert Path((model / TOKENIZER_DATA).read_text()) == (root / "data" / "tickets.csv").resolve()
    text = " ".join(body for _, body, _ in TICKETS)
    own = len(AutoTokenizer.from_pretrained(model)(text)["input_ids"])
    project = recipe.project
    other = len(build_tokenizer(sample, project.chat_template)(text)["input_ids"])
    assert own < other  # your texts tokenize compactly
    built = (model / "config.json").stat().st_mtime_ns
    ensure_tiny_model(recipe)  # the same data: kept
    assert (model / "config.json").stat().st_mtime_ns == built
    local.write_text("", encoding="utf-8")  # back on the task's default data: the sample
    ensure_tiny_model(parse_recipe(["--config", RECIPE, "--smoke"]))
    assert Path((model / TOKENIZER_DATA).read_text()) == sample.resolve()


def test_processes_asking_for_the_tiny_model_at_once_build_it_once(tmp_path, monkeypatch):
    """The ranks of `make smoke-distributed` both ask for outputs/tiny-model on a fresh project
    (CI: one rank loaded a half-written folder and failed). One builds, under a lock, into a
    private folder renamed into place; the other waits and finds it finished."""
    import threading
    import time

    from grpo_kit.offline import tiny_model
    from grpo_kit.recipe import TINY_MODEL_DIR, parse_recipe

    root = make_project(tmp_path / "project", "math")
    monkeypatch.chdir(root)
    recipe = parse_recipe(["--config", RECIPE, "--smoke"])
    builds, seen = [], []

    def slow_build(out_dir, project, recipe=None):
        builds.append(out_dir)
        out_dir.mkdir(parents=True)
        (out_dir / "config.json").write_text("{}", encoding="utf-8")  # the first file, then...
        time.sleep(0.5)
        (out_dir / "model.safetensors").write_text("weights", encoding="utf-8")
        return out_dir

    def ask():
        tiny_model.ensure_tiny_model(recipe)
        seen.append(sorted(p.name for p in (root / TINY_MODEL_DIR).iterdir()))

    monkeypatch.setattr(tiny_model, "project_tiny_model", slow_build)
    threads = [threading.Thread(target=ask) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(builds) == 1 and builds[0] != root / TINY_MODEL_DIR  # built aside, once
    finished = sorted(["config.json", "model.safetensors", tiny_model.TOKENIZER_DATA])
    assert seen == [finished, finished]  # neither caller saw a half-written folder
    assert not list((root / "outputs").glob("tiny-model.building-*"))


def test_reward_debug_says_which_rows_it_scores_and_why_more_than_smoke(projects, capsys):
    """issue 29: reward-debug read 32 rows where smoke reads 16 without saying why."""
    from conftest import chdir
    from grpo_kit.commands import reward_debug
    from grpo_kit.recipe import SMOKE_OVERRIDES

    root = projects("math")
    with chdir(root):
        assert reward_debug.debug(["--config", RECIPE, "--limit", "1"])
    rows = len((root / "data" / "sample_math.jsonl").read_text().splitlines())
    note = next(line for line in capsys.readouterr().out.splitlines() if "reward-debug:" in line)
    assert f"scoring all its {rows} rows of data/sample_math.jsonl" in note
    assert f"smoke run trains on the first {SMOKE_OVERRIDES['max_train_samples']} only" in note
    with chdir(root):
        reward_debug.debug(["--config", RECIPE, "--limit", "1", "--max-rows", "5"])
    note = next(line for line in capsys.readouterr().out.splitlines() if "reward-debug:" in line)
    assert f"scoring 5 of its {rows} rows (--max-rows 5) of data/sample_math.jsonl" in note
