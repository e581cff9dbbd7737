"""The health monitor: each check on crafted logs, the per-group spread it logs through TRL,
and real runs whose reward, or correctness alone, never varies."""

import asyncio
import json
from types import SimpleNamespace

import pytest
from conftest import TASKS, load, sample_recipe, smoke_train
from grpo_kit.callbacks.health import (
    HEALTH_LOG,
    TOOL_CALLS,
    TOOL_FAILURES,
    HealthMonitor,
    assess,
    default_limits,
    limits_from,
    spread_metric,
    watch_group_spread,
)
from transformers import TrainerControl


def logs(n, **values):
    """n training log rows; a value may be a list (one per row) or a constant."""
    rows = []
    for i in range(n):
        row = {"step": i + 1, "reward": 0.5, "reward_std": 0.3, "frac_reward_zero_std": 0.1}
        for key, value in values.items():
            row[key] = value[i] if isinstance(value, list) else value
        rows.append(row)
    return rows


def checks(rows, **limits):
    return {f.check: f for f in assess(rows, default_limits(**limits))}


def test_healthy_logs_raise_nothing():
    rows = logs(30, reward=[0.1 + 0.02 * i for i in range(30)], entropy=1.5, kl=0.05,
                **{"completions/clipped_ratio": 0.05})  # fmt: skip
    assert checks(rows, beta=0.04) == {}


def test_zero_std_warns_then_turns_fatal_when_it_persists():
    one = checks(logs(1, reward_std=0.0, frac_reward_zero_std=1.0))
    assert (
        one["reward_std"].severity == "warning" and "make reward-debug" in one["reward_std"].message
    )
    three = checks(logs(3, reward_std=0.0, frac_reward_zero_std=1.0), patience=3)
    assert three["reward_std"].severity == "fatal"
    assert "reward_std" in checks(logs(1, frac_reward_zero_std=0.9))
    assert "reward_std" not in checks(logs(1, frac_reward_zero_std=0.5))


def test_kl_is_checked_only_with_a_kl_term():
    rows = logs(3, kl=0.9)
    assert "kl" not in checks(rows, beta=0.0)
    finding = checks(rows, beta=0.04)["kl"]
    assert finding.severity == "warning" and "learning_rate" in finding.message
    assert checks(logs(3, kl=1.5), beta=0.04, patience=3)["kl"].severity == "fatal"


def test_entropy_collapse_and_clipping():
    assert "entropy" in checks(logs(1, entropy=0.01))
    clipped = checks(logs(1, **{"completions/clipped_ratio": 0.6}), max_completion_length=256)
    assert "max_completion_length (256 tokens)" in clipped["clipped_ratio"].message


def test_a_flat_reward_is_a_plateau_only_after_enough_logs():
    assert "plateau" not in checks(logs(19, reward=0.42), flat_logs=20)
    assert "plateau" in checks(logs(20, reward=0.42), flat_logs=20)
    rising = logs(20, reward=[0.4 + 0.01 * i for i in range(20)])
    assert "plateau" not in checks(rising, flat_logs=20)


def test_length_rising_without_correctness_is_flagged_as_reward_hacking():
    n = 20
    lengths = [100 + 10 * i for i in range(n)]
    flat = logs(n, **{"completions/mean_length": lengths, "rewards/acc/mean": 0.2})
    assert "reward_hacking" in checks(flat, correctness="acc", flat_logs=n)
    learning = logs(n, **{"completions/mean_length": lengths,
                          "rewards/acc/mean": [0.01 * i for i in range(n)]})  # fmt: skip
    assert "reward_hacking" not in checks(learning, correctness="acc", flat_logs=n)


def test_evaluation_and_summary_rows_are_ignored():
    rows = [{"step": 1, "eval_reward": 0.0}, {"step": 2, "train_runtime": 1.0, "reward": 0.0}]
    assert assess(rows, default_limits()) == []


def test_limits_come_from_the_recipe(recipe):
    limits = limits_from(recipe.script, beta=0.04, max_completion_length=99)
    assert limits.zero_std_max == recipe.script.health_zero_std_max
    assert limits.beta == 0.04 and limits.max_completion_length == 99
    assert limits.tool_failure_max == recipe.script.health_tool_failure_max
    assert limits.tool_logs == recipe.script.health_tool_logs
    assert limits.tool_warmup_logs == recipe.script.health_tool_warmup_logs
    assert limits.max_tool_calling_iterations is None  # TRL's default: no cap
    capped = limits_from(recipe.script, max_tool_calling_iterations=4)
    assert capped.max_tool_calling_iterations == 4


TOOL_CHECKS = {"no_tool_calls", "tool_call_cap", "tool_failures"}


def tool_logs(n, calls, failures=0.0):
    """n training logs of a tool-calling run (the two metrics TRL logs for one)."""
    return logs(n, **{TOOL_CALLS: calls, TOOL_FAILURES: failures})


def test_tool_checks_stay_quiet_on_runs_without_tools():
    """No tool metrics in the logs: none of the tool checks runs, whatever the limits say."""
    rows = logs(30, reward=[0.1 + 0.02 * i for i in range(30)])
    found = checks(rows, tool_warmup_logs=0, tool_logs=1, max_tool_calling_iterations=1,
                   tool_failure_max=0.0)  # fmt: skip
    assert not TOOL_CHECKS & set(found)


def test_healthy_tool_use_raises_nothing():
    rows = tool_logs(30, calls=[0.0] * 5 + [1.5] * 25, failures=0.1)
    assert not TOOL_CHECKS & set(checks(rows, max_tool_calling_iterations=4))


def test_a_model_that_never_calls_a_tool_warns_after_the_warm_up():
    limits = {"tool_warmup_logs": 5, "tool_logs": 3}
    assert "no_tool_calls" not in checks(tool_logs(7, calls=0.0), **limits)  # in the warm-up
    finding = checks(tool_logs(8, calls=0.0), **limits)["no_tool_calls"]
    assert finding.severity == "warning" and "system prompt" in finding.message
    assert "tools/call_frequency" in finding.message and "warm start" in finding.message
    # One log with calls inside the window: not (yet) a model that never calls.
    assert "no_tool_calls" not in checks(tool_logs(8, calls=[0.0] * 6 + [0.5, 0.0]), **limits)
    # Calls stopping later count too: three silent logs after calls warn again.
    stopped = tool_logs(12, calls=[1.0] * 9 + [0.0] * 3)
    assert "no_tool_calls" in checks(stopped, **limits)


def test_rollouts_that_call_until_the_cap_warn():
    cap = {"max_tool_calling_iterations": 4, "tool_logs": 3}
    finding = checks(tool_logs(3, calls=4.0), **cap)["tool_call_cap"]
    assert finding.severity == "warning" and finding.limit == 4.0
    assert "max_tool_calling_iterations 4" in finding.message and "cost" in finding.message
    assert "tool_call_cap" not in checks(tool_logs(2, calls=4.0), **cap)  # not yet lasting
    assert "tool_call_cap" not in checks(tool_logs(3, calls=[4.0, 3.5, 4.0]), **cap)
    assert "tool_call_cap" not in checks(tool_logs(3, calls=3.9), **cap)
    # No cap set (TRL's default None): nothing to compare with.
    assert "tool_call_cap" not in checks(tool_logs(3, calls=40.0), tool_logs=3)


def test_most_tool_calls_failing_warns():
    limits = {"tool_failure_max": 0.5, "tool_logs": 3}
    finding = checks(tool_logs(3, calls=1.0, failures=0.8), **limits)["tool_failures"]
    assert finding.severity == "warning" and finding.value == 0.8
    assert "80% of tool calls failed" in finding.message and "docstrings" in finding.message
    assert "tool_failures" not in checks(tool_logs(3, calls=1.0, failures=0.5), **limits)
    assert "tool_failures" not in checks(tool_logs(2, calls=1.0, failures=0.8), **limits)
    mixed = tool_logs(3, calls=1.0, failures=[0.8, 0.2, 0.8])
    assert "tool_failures" not in checks(mixed, **limits)


def test_the_monitor_raises_a_tool_finding_once_and_clears_it(tmp_path):
    """The tool checks go through HealthMonitor like the others: one `raised` event while the
    problem lasts, one `cleared` when it ends."""
    monitor = HealthMonitor(default_limits(tool_logs=2, tool_failure_max=0.5), str(tmp_path))
    history = []
    for i, failed in enumerate([0.9, 0.9, 0.9, 0.1]):
        history.append({"step": i + 1, "reward": 0.5 + 0.1 * i, "reward_std": 0.3,
                        TOOL_CALLS: 1.0, TOOL_FAILURES: failed})  # fmt: skip
        state = SimpleNamespace(log_history=history, is_world_process_zero=True,
                                global_step=i + 1)  # fmt: skip
        monitor.on_log(None, state, TrainerControl())
    events = [json.loads(line) for line in (tmp_path / HEALTH_LOG).read_text().splitlines()]
    assert [(e["check"], e["event"], e["step"]) for e in events] == [
        ("tool_failures", "raised", 2),
        ("tool_failures", "cleared", 4),
    ]


def constant_reward(completions, **kwargs):
    return [1.0] * len(completions)


def test_a_run_whose_reward_never_varies_triggers_the_reward_std_warning(tiny_model_dir, tmp_path):
    trainer = smoke_train(
        tiny_model_dir, tmp_path / "run", "--reward_funcs", "test_health.constant_reward",
        "--reward_weights", "1.0", "--health_stop_on_fatal", "true", "--health_patience", "2",
        "--max_steps", "4",
    )  # fmt: skip
    events = [json.loads(line) for line in (tmp_path / "run" / HEALTH_LOG).read_text().splitlines()]
    assert events[0]["check"] == "reward_std" and events[0]["event"] == "raised"
    assert "make reward-debug" in events[0]["message"]
    # health_stop_on_fatal: two logs in a row without any spread stop the run early.
    assert trainer.state.global_step == 2
    record = json.loads((tmp_path / "run" / "run_record.json").read_text())
    assert record["status"].startswith("stopped by the health check")


def test_correctness_without_spread_is_flagged_even_when_the_total_reward_varies():
    key = spread_metric("acc")
    rows = logs(1, **{key: 1.0, "frac_reward_zero_std": 0.0})
    finding = checks(rows, correctness="acc")["correctness_spread"]
    assert finding.severity == "warning" and "phantom gradients" in finding.message
    assert "make filter" in finding.message
    assert "correctness_spread" not in checks(logs(1, **{key: 0.5}), correctness="acc")
    assert "correctness_spread" not in checks(rows)  # no correctness reward named: not checked
    # No correctness signal at all for a plateau's length of logs: fatal.
    dead = checks(logs(20, **{key: 1.0}), correctness="acc", flat_logs=20)
    assert dead["correctness_spread"].severity == "fatal"


def test_vllm_rollouts_the_trainer_disagrees_with_are_flagged():
    healthy = {"sampling/sampling_logp_difference/mean": 0.01,
               "sampling/importance_sampling_ratio/mean": 1.0,
               "sampling/importance_sampling_ratio/min": 0.6}  # fmt: skip
    assert "sampling" not in checks(logs(3, **healthy))
    gap = checks(logs(1, **{**healthy, "sampling/sampling_logp_difference/mean": 0.3}))
    assert "0.3 nats" in gap["sampling"].message and "token_truncate" in gap["sampling"].message
    low = checks(logs(1, **{**healthy, "sampling/importance_sampling_ratio/mean": 0.55}))
    assert "mean importance ratio is 0.55" in low["sampling"].message
    masked = {**healthy, "sampling/importance_sampling_ratio/min": 0.0}
    assert "sampling" not in checks(logs(2, **masked), patience=3)  # one-off drops are normal
    assert "masked out" in checks(logs(3, **masked), patience=3)["sampling"].message


def call_like_trl(func, values_per_prompt, logged):
    """Call a wrapped reward as TRL does: prompts repeated per completion, and log_metric."""
    prompts = [p for p, values in values_per_prompt for _ in values]
    completions = [v for _, values in values_per_prompt for v in values]
    return func(prompts=prompts, completions=completions,
                log_metric=lambda name, value: logged.append((name, value)))  # fmt: skip


def echo(completions, **kwargs):
    return list(completions)


def test_the_per_group_spread_of_a_reward_is_logged_through_trl():
    watched = watch_group_spread(echo, num_generations=4)
    assert watched.__name__ == "echo"
    logged = []
    scores = call_like_trl(watched, [("a", [1.0, 1.0, 1.0, 1.0]), ("b", [0.0, 1.0, 0.0, 0.0])],
                           logged)  # fmt: skip
    assert scores == [1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    assert logged == [("rewards/echo/frac_zero_std", 0.5)]
    # None ("not applicable") is left out of a group, as TRL does; an unscored group is skipped.
    logged.clear()
    call_like_trl(watched, [("a", [None, 1.0, 1.0, None]), ("b", [None] * 4)], logged)
    assert logged == [("rewards/echo/frac_zero_std", 1.0)]
    # A batch that does not hold whole groups (a group split across processes): nothing logged.
    logged.clear()
    call_like_trl(watched, [("a", [1.0, 1.0]), ("b", [0.0, 1.0])], logged)
    assert logged == []


def test_async_rewards_stay_async():
    async def scored(completions, **kwargs):
        return [0.0] * len(completions)

    watched = watch_group_spread(scored, num_generations=2)
    logged = []
    coroutine = call_like_trl(watched, [("a", [1, 2])], logged)
    assert asyncio.run(coroutine) == [0.0, 0.0] and logged == [(spread_metric("scored"), 1.0)]


def alternating_format(completions, **kwargs):
    """A stand-in format reward that always varies within a group."""
    return [float(i % 2) for i in range(len(completions))]


@pytest.fixture(scope="module")
def task_models(projects, tmp_path_factory):
    """`task_models(task)`: the tiny model of that task's project (made once per module); an
    agent task's is built with its recipe (it is taught the task's tool calls)."""
    from grpo_kit.offline.tiny_model import project_tiny_model

    made = {}

    def get(task):
        if task not in made:
            root = projects(task)
            recipe = sample_recipe(root)
            out = tmp_path_factory.mktemp(f"tiny-{task}") / "model"
            made[task] = project_tiny_model(out, recipe.project, recipe=recipe)
        return made[task]

    return get


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_a_run_whose_correctness_never_varies_warns_though_format_varies(
    task, projects, task_models, tmp_path, monkeypatch
):
    """The tiny random model never answers correctly, while the stand-in format reward varies in
    every group: the total reward has spread, correctness has none. Also: the run ends with
    Trainer.end() (closing trackers and the process group), as TRL's own script does."""
    from transformers import Trainer

    ended = []
    monkeypatch.setattr(Trainer, "end", lambda self: ended.append(self), raising=False)
    root = projects(task)
    correctness = load(root).task.correctness
    trainer = smoke_train(
        task_models(task), tmp_path / "run", "--reward_funcs", correctness,
        "test_health.alternating_format", "--reward_weights", "1.0", "1.0",
        "--max_steps", "1", root=root,
    )  # fmt: skip
    rows = [r for r in trainer.state.log_history if "reward" in r]
    assert all(r[spread_metric(correctness)] == 1.0 for r in rows)
    assert all(r["frac_reward_zero_std"] == 0.0 for r in rows)
    events = [json.loads(line) for line in (tmp_path / "run" / HEALTH_LOG).read_text().splitlines()]
    raised = [e for e in events if e["check"] == "correctness_spread" and e["event"] == "raised"]
    assert raised and "phantom gradients" in raised[0]["message"]
    assert ended == [trainer]
