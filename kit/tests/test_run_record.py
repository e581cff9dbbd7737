"""The run record: enough to reproduce and compare a run."""

import json

import pytest
from conftest import rows_of, sample_recipe
from grpo_kit.callbacks.run_record import RECORD, RunRecord
from grpo_kit.data import PromptStats


def test_run_record_has_recipe_versions_data_and_outcome(logged_run):
    record = json.loads((logged_run / "run_record.json").read_text())
    assert record["status"] == "finished" and record["global_step"] == 4
    assert record["recipe"]["max_steps"] == 4  # after the command-line override
    assert record["recipe"]["log_completions"] is True
    assert {"torch", "transformers", "trl", "peft", "python"} <= set(record["versions"])
    assert record["dataset"]["sha256"] and len(record["dataset"]["sha256"]) == 64
    assert record["rows"]["kept"] > 0 and record["rows"]["dropped_too_long"] >= 0
    assert record["seed"] == record["recipe"]["seed"]
    assert "reward" in record["final_metrics"]
    assert record["command"][-1] and "git" in record
    # The command reruns the project's train script (`python -m grpo_kit train` runs it).
    assert record["command"][1:4] == ["-m", "grpo_kit", "train"]
    settings, recipe = record["reward_settings"], record["recipe"]
    assert settings["max_completion_length"] == recipe["max_completion_length"]
    assert "limits" not in settings  # only the code task runs a sandbox


def test_the_code_tasks_record_names_its_sandbox(projects, tmp_path):
    """The code task's rewards run in the sandbox: the record says which isolation and limits."""
    recipe = sample_recipe(projects("code"))
    rows = rows_of(recipe)
    record = RunRecord(recipe, ["--smoke"])
    record.path = tmp_path / RECORD  # not the project's outputs/
    record.start(recipe.script, rows, PromptStats(len(rows), 0, 1), recipe.reward_settings())
    settings = json.loads(record.path.read_text())["reward_settings"]
    assert settings["max_completion_length"] == recipe.training.max_completion_length
    assert settings["limits"]["isolation"] in ("bubblewrap", "unshare", "process")


def test_adaptive_weights_log_each_change(logged_run):
    lines = (logged_run / "reward_weights.jsonl").read_text().splitlines()
    changes = [json.loads(line) for line in lines]
    assert changes and all(c["old"] != c["new"] and 0 <= c["success"] <= 1 for c in changes)


def test_the_record_names_the_checks_that_fired_and_stays_strict_json(recipe, tmp_path):
    """A NaN in the final metrics is written as "nan" (strict JSON), and the health checks that
    fired (health.fired over health.jsonl) are in the record."""
    from types import SimpleNamespace

    from grpo_kit.callbacks.health import fired

    record = RunRecord(recipe, ["--smoke"])
    record.path = tmp_path / RECORD
    history = [{"step": 1, "reward": 0.5, "grad_norm": float("nan"), "kl": float("inf")},
               {"step": 1, "eval_reward": 0.25}]  # fmt: skip
    events = [{"check": "non_finite", "severity": "fatal", "step": 1, "value": "nan",
               "limit": 0.0, "message": "grad_norm nan", "event": "raised"}]  # fmt: skip
    state = SimpleNamespace(log_history=history, global_step=1)
    record.finish(state, "stopped by the health check (non_finite)", None, fired(events))
    written = json.loads(record.path.read_text(), parse_constant=pytest.fail)
    assert written["final_metrics"]["grad_norm"] == "nan"
    assert written["final_metrics"]["kl"] == "inf"
    assert written["final_eval_metrics"]["eval_reward"] == 0.25
    health = written["health"]["non_finite"]
    assert health["severity"] == "fatal" and health["first_step"] == 1 and health["active"]


def test_the_smoke_runs_record_lists_the_checks_in_its_health_log(logged_run):
    record = json.loads((logged_run / RECORD).read_text())
    events = [json.loads(line) for line in (logged_run / "health.jsonl").read_text().splitlines()]
    assert set(record["health"]) == {e["check"] for e in events if e["event"] == "raised"}
