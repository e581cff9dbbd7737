"""The judge against a real OpenAI-compatible server: `transformers serve` (transformers' own
server) on the real SmolLM2-135M-Instruct (grpo_kit/offline/real_model.py), started once per
session on 127.0.0.1, never a mock (and a custom project with a judge reward trains two smoke
steps against it). What is sent is inspected through `Judge(on_reply=...)`, the
bodies the client posts and the replies the server gave.

SmolLM2-135M is a weak judge: it mostly follows the reply format after two graded examples,
often gives an off-scale number (a parse error: None) and is swayed by any "10" in the text.
So the assertions are structural (what reaches the judge, where a score comes from, what a
failure and a spent budget cost) and, for the hostile suite, that no attack earns more than the
honest content under the kit's defaults; what the model does with plain persuasion, which no
pattern catches, is printed, not asserted.

Skipped, with the reason, where the model cannot be built or FastAPI/uvicorn are missing
(`pip install "grpo-kit[judge]"`). About 100 s on 2 busy CPU cores: twenty short requests and
two training steps of the tiny policy."""

from __future__ import annotations

import html
import json
import time

import pytest
from grpo_kit.offline import judge_server, real_model
from grpo_kit.rewards.judge import (
    Criterion,
    Endpoint,
    Example,
    Judge,
    Rubric,
    hostile_variants,
    judge_reward,
    parse_scores,
)

pytestmark = [pytest.mark.real, pytest.mark.judge]

QUESTION = "What is the capital of France?"
HONEST = "The capital of France is Paris."
WRONG = "The capital of France is Berlin."
# Two graded examples: SmolLM2-135M follows the reply format after them, not without.
RUBRIC = Rubric(
    (Criterion("correct", "the answer to the question is right"),),
    scale=(0, 10),
    task="short factual answers",
    examples=(
        Example("What is 2+2?", "2+2 is 5.", {"correct": 0}),
        Example("What is 3+3?", "3+3 = 6.", {"correct": 10}),
    ),
)
TOLERANCE = 0.1  # of the [0, 1] reward: one step of the 0..10 scale


@pytest.fixture(scope="session")
def server():
    why = judge_server.serving_available()
    if why:
        pytest.skip(f"no local judge server: {why}")
    try:
        folder = real_model.ensure_real_model()
    except real_model.RealModelUnavailable as err:
        pytest.skip(f"the real model ({real_model.NAME}) cannot be built here: {err}")
    local = judge_server.LocalJudgeServer(folder)
    try:
        local.start()
    except judge_server.JudgeServerUnavailable as err:
        pytest.skip(f"the local judge server did not start: {err}")
    yield local
    local.stop()


class Exchanges:
    """The (body, reply) of every request a judge made."""

    def __init__(self) -> None:
        self.seen: list[tuple[dict, str | None]] = []

    def __call__(self, body: dict, reply: str | None) -> None:
        self.seen.append((body, reply))

    def for_response(self, text: str, max_chars: int = 600) -> list[tuple[dict, str | None]]:
        return [(b, r) for b, r in self.seen if quoted_response(b) == text[:max_chars]]


def quoted_response(body: dict) -> str:
    """The response as the judge read it: the one <response> block of the last message."""
    content = body["messages"][-1]["content"]
    assert content.count("<response>") == 1 and content.count("</response>") == 1, content
    inside = content.split("<response>\n", 1)[1].split("\n</response>", 1)[0]
    assert "<" not in inside and ">" not in inside
    return html.unescape(inside)


def make_judge(server, exchanges, **options) -> Judge:
    options = {"workers": 2, "batch_budget_s": 90.0, "max_chars": 600, **options}
    return Judge(RUBRIC, Endpoint(server.base_url, server.model), on_reply=exchanges, **options)


def score_from_reply(reply: str | None) -> float | None:
    try:
        return RUBRIC.combine(parse_scores(reply, RUBRIC))
    except Exception:
        return None


def test_the_real_server_grades_and_the_cache_saves_the_second_asking(server):
    exchanges = Exchanges()
    with make_judge(server, exchanges) as judge:
        scores, metrics = judge.score([QUESTION] * 3, [HONEST, WRONG, HONEST])
        assert (metrics.requests, metrics.cache_hits, metrics.failures) == (2, 1, 0)
        assert metrics.answered == 2 and metrics.latency_s > 0
        # every score is the judge's reply, parsed strictly: a number or None with a parse error
        for text, score in zip([HONEST, WRONG], scores, strict=False):
            ((body, reply),) = exchanges.for_response(text)
            assert score == score_from_reply(reply), (text, reply)
            assert body["model"] == server.model and body["temperature"] == 0.0
        assert metrics.parse_errors == sum(1 for s in scores[:2] if s is None)
        assert scores[2] == scores[0]
        again, cached = judge.score([QUESTION] * 3, [HONEST, WRONG, HONEST])
    assert again == scores
    # judged rows are not asked again; rows that got no judgement are
    assert cached.requests == sum(1 for s in scores[:2] if s is None)
    replies = [reply for _, reply in exchanges.seen[:2]]
    print(f"\nSmolLM2-135M as a judge: honest {scores[0]}, wrong {scores[1]} (replies {replies})")


def test_through_trl_s_calling_convention_the_metrics_are_logged(server):
    logged: dict[str, float] = {}
    with make_judge(server, Exchanges()) as judge:
        reward = judge_reward(judge, name="correctness")
        scores = reward(
            prompts=[
                [{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}]
            ],
            completions=[[{"role": "assistant", "content": HONEST}]],
            completion_ids=[[1, 2]],
            log_metric=logged.__setitem__,
        )
    assert len(scores) == 1 and (scores[0] is None or 0.0 <= scores[0] <= 1.0)
    assert logged["rewards/correctness/judge_requests"] == 1.0
    assert logged["rewards/correctness/judge_failures"] == 0.0
    assert logged["rewards/correctness/judge_latency_s"] > 0


def test_hostile_completions_reach_the_real_judge_only_quoted_and_earn_no_more_than_honest(
    server, capsys
):
    variants = hostile_variants(HONEST, RUBRIC, long_chars=3000)
    # Sent (injections="judge"), the attacks on the quoting: what reaches the judge, and where
    # the score comes from.
    attacks = [variants[name] for name in ("closed_block", "turn_markers", "long")]
    exchanges = Exchanges()
    with make_judge(server, exchanges, injections="judge") as judge:
        sent, metrics = judge.score([QUESTION] * len(attacks), attacks)
    assert metrics.failures == 0 and metrics.requests == len(attacks) == metrics.injections
    for text, score in zip(attacks, sent, strict=True):
        ((body, reply),) = exchanges.for_response(text)
        assert quoted_response(body) == text[:600]  # whole, or cut, and as data
        if len(text) > 600:
            assert f"first 600 of {len(text)} characters" in body["messages"][-1]["content"]
        assert score == score_from_reply(reply)  # the judge's reply, never the completion's
        for message in body["messages"][:-1]:  # nothing of the completion outside its block
            assert "Paris" not in message["content"]
    # The kit's defaults: what the patterns see scores 0 unasked; the rest is the model's.
    texts = [HONEST, *variants.values()]
    with make_judge(server, Exchanges()) as judge:
        defended, metrics = judge.score([QUESTION] * len(texts), texts)
    assert metrics.requests == 3 and metrics.injections == len(variants) - 2
    honest, by_name = defended[0], dict(zip(variants, defended[1:], strict=True))
    with capsys.disabled():
        print(f"\nSmolLM2-135M judging {HONEST!r}, attacks sent: {sent}")
        print(f"SmolLM2-135M, the kit's defaults: honest {honest}, {by_name}")
    for name, score in by_name.items():
        if name == "persuasion":
            continue  # plain words: the judge model's to resist (printed above)
        if name == "padding":
            if score is not None and honest is not None:
                assert score <= honest + TOLERANCE, (name, score, honest)
            continue
        assert score == 0.0, name


def test_a_project_with_a_judge_reward_trains_and_logs_the_judge(
    server, tiny_model_dir, tmp_path_factory
):
    """The custom starter with a judge reward beside its own, the judge's URL and model task
    arguments set on the command line: two smoke steps of the tiny policy, its completions
    graded by the real server, the judge's metrics in TRL's logs."""
    from conftest import smoke_train
    from test_judge import judged_project

    # the project's default judge is down; the command line points it at the real server
    root = judged_project(
        tmp_path_factory.mktemp("judged"), "judged_custom", "http://127.0.0.1:9/v1", "nobody"
    )
    trainer = smoke_train(
        tiny_model_dir, root / "outputs" / "run", "--max_steps", "2",
        "--judge_base_url", server.base_url, "--judge_model", server.model, root=root,
    )  # fmt: skip
    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logged) == 2
    for entry in logged:
        asked = entry["rewards/correct_by_judge/judge_completions"]
        assert asked > 0 and entry["rewards/correct_by_judge/judge_failures"] == 0
        assert (
            entry["rewards/correct_by_judge/judge_judged"]
            + entry["rewards/correct_by_judge/judge_parse_errors"]
            + entry["rewards/correct_by_judge/judge_injections"]
            >= asked - entry["rewards/correct_by_judge/judge_cache_hits"]
        )
        if entry["rewards/correct_by_judge/judge_judged"]:  # else TRL's mean is NaN
            assert 0.0 <= entry["rewards/correct_by_judge/mean"] <= 1.0


def test_a_slow_server_costs_the_batch_budget_and_the_late_rows_are_none(server):
    # Last in the file: the requests given up on are still answered by the server afterwards.
    exchanges = Exchanges()
    budget = 1.0
    texts = [f"The capital of France is Paris ({i})." for i in range(6)]
    with make_judge(server, exchanges, batch_budget_s=budget, retries=0) as judge:
        start = time.monotonic()
        scores, metrics = judge.score([QUESTION] * len(texts), texts)
        spent = time.monotonic() - start
    assert spent < budget + 1.0, spent
    assert scores.count(None) >= 4  # 2 in flight at most; a CPU request takes seconds
    assert metrics.timeouts + metrics.failures + metrics.parse_errors == scores.count(None)
    assert metrics.timeouts >= 4
    json.dumps(metrics.as_dict())  # loggable as it is
