"""The judge starter (a rubric judge reward beside the format and length rewards): its rewards'
golden cases, its labelled set (make reward-debug's agreement), and, against a real local
`transformers serve` on a tiny random judge (never a mock), its checks and its smoke run
with the judge's metrics logged. The tiny judge's replies are noise (parse errors):
these prove the plumbing; tests/test_judge_server.py measures a real small judge."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import STARTERS, chdir, make_project
from grpo_kit import data
from grpo_kit.offline import judge_server
from grpo_kit.recipe import parse_recipe
from grpo_kit.rewards import call_like_trl
from grpo_kit.rewards.judge import ENDPOINT_SETTINGS, is_judge, judge_reward
from grpo_kit.starters.judge import rewards
from grpo_kit.starters.judge.task import TASK
from test_judge import unused_port

LABELLED = STARTERS / "data" / "labelled_judge.jsonl"


def needs_server():
    why = judge_server.serving_available()
    if why:
        pytest.skip(f"no local judge server: {why}")


@pytest.mark.parametrize(
    ("completion", "graded"),
    [
        ("<think>plan</think><answer>Air scatters blue.</answer>", "Air scatters blue."),
        ("<think>plan</think> Air scatters blue. ", "Air scatters blue."),  # no block: the rest
        ("Air scatters blue.", "Air scatters blue."),
        ("<think><answer>in the reasoning</answer></think>", ""),  # reasoning is not graded
    ],
)
def test_the_judge_reads_the_answer_not_the_reasoning(completion, graded):
    assert rewards.graded_text(completion) == graded


def test_the_endpoint_is_three_task_arguments_bound_as_the_judge_reward_s_settings():
    assert is_judge(rewards.rubric_grade)
    assert rewards.rubric_grade.settings == ENDPOINT_SETTINGS
    defaults = TASK.arguments()
    settings = TASK.reward_settings(defaults)
    assert tuple(settings) == ENDPOINT_SETTINGS
    assert settings["judge_api_key_env"] == ""  # no key for a local server
    judge = rewards.build_judge(**settings)
    assert judge.endpoint.api_key_env is None
    assert judge_server.local_judge_rewards(TASK) == ["rubric_grade"]


def test_graded_parts_none_score_0_unasked_and_are_counted():
    """`judge_reward(graded=...)`: a completion with nothing to grade costs no request."""
    from grpo_kit.rewards.judge import Endpoint, Judge

    seen = []
    dead = Judge(
        rewards.RUBRIC,
        Endpoint(f"http://127.0.0.1:{unused_port()}/v1", "m"),
        retries=0,
        batch_budget_s=5.0,
        on_reply=lambda body, reply: seen.append(body),
    )
    reward = judge_reward(
        dead, "graded", graded=lambda text: text.split("|", 1)[1] if "|" in text else None
    )
    logged = {}
    scores = reward(
        completions=["nothing here", "a|something", "again nothing"],
        prompts=["q"] * 3,
        log_metric=logged.__setitem__,
    )
    assert scores == [0.0, None, 0.0]  # the server is down: the asked one is None
    assert len(seen) == 1 and "something" in seen[0]["messages"][-1]["content"]
    assert logged["rewards/graded/judge_completions"] == 3
    assert logged["rewards/graded/judge_judged"] == 2
    assert logged["rewards/graded/judge_failures"] == 1


def test_the_labelled_set_names_the_task_s_rewards_and_its_format_references_are_exact():
    """Reference scores for every line: on the reward's range; the deterministic reward's
    references equal what it scores (so the agreement table's judge figures are the only
    opinion in it); rows index the sample."""
    lines = [json.loads(line) for line in LABELLED.read_text().splitlines()]
    sample = (STARTERS / "data" / "sample_judge.jsonl").read_text().splitlines()
    table = TASK.reward_table
    assert len(lines) >= 12
    grades = [line["reference"]["rubric_grade"] for line in lines]
    assert min(grades) == 0.0 and max(grades) == 1.0 and len(set(grades)) > 5
    for line in lines:
        assert 0 <= line["row"] < len(sample)
        for name, value in line["reference"].items():
            assert name in table, name
            low, high = table[name].reward_range.low, table[name].reward_range.high
            assert low <= value <= high, (name, value)
        [strict] = call_like_trl(rewards.strict_format, [line["completion"]], [{}])
        assert strict == line["reference"]["strict_format"], line["completion"]


def test_a_judge_correctness_reward_is_not_asked_about_golds(tmp_path):
    """Training's unreadable-golds check called the correctness reward on an empty completion
    per row: a judge's None (a failed request) read as an unreadable gold, and a request per
    row. A judge reads no gold: the check leaves it out."""
    root = make_project(tmp_path / "p", "judge")
    argv = ["--config", "configs/grpo.yaml", "--judge_base_url",
            f"http://127.0.0.1:{unused_port()}/v1"]  # fmt: skip
    with chdir(root):
        recipe = parse_recipe(argv, read_only=True, offline_data=True)
        rows = data.load_training_rows(recipe.script, recipe.task, recipe.project.task)
        rows = data.to_conversations(rows, recipe.script, recipe.task, recipe.project.task)
        start = time.monotonic()
        assert data.unreadable_golds(rows, recipe) is None
        assert data.gold_problem(rows, recipe, "sample") is None
    assert time.monotonic() - start < 1.0  # no request, no retry


@pytest.mark.judge
def test_the_project_s_judge_answers_through_a_real_local_server(tmp_path):
    """For a vision-language policy too (Qwen3.5, the default model): the offline judge is a
    tiny text-only model of its own (`transformers serve` on the policy's tiny model, a
    vision-language one, exited asking for an image processor)."""
    from grpo_kit.testing import ProjectChecks

    needs_server()
    root = make_project(
        tmp_path / "p", "judge", tiny_arch="qwen3_5", chat_template="qwen3_5_nothink"
    )
    texts = ["<think>a</think><answer>Air scatters blue light.</answer>", "no tags", "x"]
    found = ProjectChecks(root).judged_locally(texts)
    scores, logged = found["rubric_grade"]
    assert len(scores) == 3 and all(s is None or 0.0 <= s <= 1.0 for s in scores)
    assert logged["rewards/rubric_grade/judge_requests"] == 3  # each asked, for real
    assert logged["rewards/rubric_grade/judge_failures"] == 0  # the server answered
    assert logged["rewards/rubric_grade/judge_latency_s"] > 0


@pytest.mark.slow
@pytest.mark.judge
def test_smoke_trains_with_the_judge_served_locally_and_its_metrics_logged(tmp_path, capsys):
    from grpo_kit.commands import smoke

    needs_server()
    root = make_project(tmp_path / "p", "judge")
    with chdir(root):
        answers = smoke.pipeline(["--config", "configs/grpo.yaml", "--output_dir", "outputs/s"])
    assert len(answers) == 1
    assert "graded by a local `transformers serve`" in capsys.readouterr().out
    state = json.loads(Path(root / "outputs/s/trainer_state.json").read_text())
    logged = [entry for entry in state["log_history"] if "loss" in entry]
    assert len(logged) == 2
    for entry in logged:
        asked = entry["rewards/rubric_grade/judge_completions"]
        assert asked == 4 and entry["rewards/rubric_grade/judge_failures"] == 0
        assert entry["rewards/rubric_grade/judge_requests"] >= 1  # the real server was asked
