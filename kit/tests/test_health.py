"""The health monitor: each check on crafted logs, the per-group spread it logs through TRL,
and real runs whose reward, or correctness alone, never varies."""

import asyncio
import json
from types import SimpleNamespace

import pytest
from conftest import RECIPE, VERIFIED_TASKS, chdir, load, sample_recipe, smoke_train
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
from grpo_kit.commands import warmup
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


WARMUP = "the warm-up in outputs/run-warmup (24 steps at batch 8)"


def test_entropy_low_from_the_first_log_after_a_warm_up_blames_the_warm_up():
    """Issue 40: GRPO from an overfit warm-up logged entropy 0.028 at step 1 and the warning
    said "lower learning_rate"; the warm-up is the cause, and the warning says how to redo it."""
    low = logs(3, entropy=[0.028, 0.03, 0.02])
    blamed = checks(low, warmup=WARMUP)["entropy"]
    assert "from the first log" in blamed.message and WARMUP in blamed.message
    assert "re-run make warmup with a higher --min-entropy" in blamed.message
    assert "fewer --epochs" in blamed.message and "Lower learning_rate" not in blamed.message
    # without a warm-up, or once entropy was healthy first: GRPO's own collapse
    for rows, origin in ((low, None), (logs(3, entropy=[1.2, 0.3, 0.02]), WARMUP)):
        message = checks(rows, warmup=origin)["entropy"].message
        assert "Lower learning_rate" in message and "warm-up" not in message


def test_the_warm_up_is_read_from_the_models_run_record():
    from grpo_kit.callbacks.health import warmup_origin

    record = {
        "recipe": {"output_dir": "outputs/run-warmup"},
        "warmup": {"steps": 24, "batch_size": 8, "entropy": {"first": 1.9, "last": 0.031},
                   "min_entropy": 0.0},
    }  # fmt: skip
    assert warmup_origin(record) == (
        "the warm-up in outputs/run-warmup (24 steps at batch 8, its completions' entropy "
        "ending at 0.031, --min-entropy 0)"
    )
    older = {"recipe": {"output_dir": "w"}, "warmup": {"examples": 32}}  # a 0.2 warm-up
    assert warmup_origin(older) == "the warm-up in w"
    assert warmup_origin({"recipe": {"output_dir": "run"}}) is None  # a GRPO run's record
    assert warmup_origin(None) is None


def test_the_report_reassesses_with_the_warm_up_the_run_started_from(recipe, tmp_path):
    """`grpo report` re-runs the checks with the run's limits: the warm-up included."""
    from grpo_kit.commands import report

    warm, run = tmp_path / "warm", tmp_path / "run"
    (warm / "merged").mkdir(parents=True)
    run.mkdir()
    (warm / "run_record.json").write_text(
        json.dumps({"recipe": {"output_dir": str(warm)}, "warmup": {"steps": 12}})
    )
    (run / "run_record.json").write_text(
        json.dumps({"recipe": {"model_name_or_path": str(warm / "merged")}})
    )
    limits = report.limits_for(run, recipe.project.task)
    assert limits.warmup == f"the warm-up in {warm} (12 steps)"
    (run / "run_record.json").write_text(json.dumps({"recipe": {"model_name_or_path": "m/x"}}))
    assert report.limits_for(run, recipe.project.task).warmup is None


def test_grpo_from_a_warm_ups_model_knows_it(project_root, tiny_model_dir, tmp_path, caplog):
    """A real warm-up on the tiny model, then GRPO from its merged folder: the monitor reads
    the warm-up's run record (with a threshold above any entropy, the first log is low)."""
    smoke = ["--config", RECIPE, "--smoke", "--model_name_or_path", str(tiny_model_dir)]
    with chdir(project_root):
        merged = warmup.warm_up(
            [*smoke, "--examples", "4", "--epochs", "1", "--output-dir", str(tmp_path / "warm")],
            project=load(project_root),
        )
    run = tmp_path / "run"
    smoke_train(merged, run, "--max_steps", "1", "--health_entropy_min", "100", root=project_root)
    raised = [
        json.loads(line) for line in (run / HEALTH_LOG).read_text().splitlines()
        if '"entropy"' in line
    ]  # fmt: skip
    assert raised and f"started from the warm-up in {tmp_path / 'warm'}" in raised[0]["message"]
    assert "re-run make warmup" in raised[0]["message"]


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
    assert events[0] == {"check": None, "event": "started", "step": 0, "active": []}
    events = events[1:]
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
@pytest.mark.parametrize("task", VERIFIED_TASKS)
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


# --- NaN and infinities (issue 25), the phantom-gradient wording (issue 26), resume (issue 28) ---


@pytest.mark.parametrize("key", ["loss", "kl", "entropy", "grad_norm"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), None])
def test_a_nan_or_inf_in_the_logs_is_fatal_with_the_fix(key, value):
    """TRL logs None for a metric whose every value was NaN: that counts as NaN too."""
    found = checks(logs(1, **{key: value}), beta=0.04)
    finding = found["non_finite"]
    assert finding.severity == "fatal" and key in finding.message
    assert "learning_rate" in finding.message and "bf16" in finding.message
    assert "resumes from the last checkpoint" in finding.message
    assert next(iter(found)) == "non_finite"  # worst first
    assert "non_finite" not in checks(logs(1, **{key: 0.5}), beta=0.04)


def test_an_fp16_skipped_step_warns_and_turns_fatal_when_it_lasts():
    """fp16's loss scaler skips a step whose gradients overflow (grad_norm inf): normal now and
    then; every step for health_patience logs is not."""
    once = checks(logs(3, grad_norm=[1.0, 1.0, float("inf")]), fp16=True, patience=3)
    assert once["non_finite"].severity == "warning" and "loss scaler" in once["non_finite"].message
    lasting = checks(logs(3, grad_norm=float("inf")), fp16=True, patience=3)
    assert lasting["non_finite"].severity == "fatal"
    # A NaN loss is no skipped step, fp16 or not; nor is grad_norm inf without fp16.
    assert checks(logs(1, loss=float("nan")), fp16=True)["non_finite"].severity == "fatal"
    assert checks(logs(1, grad_norm=float("inf")))["non_finite"].severity == "fatal"


def monitor_state(history, step, **extra):
    return SimpleNamespace(log_history=history, is_world_process_zero=True, global_step=step,
                           stateful_callbacks={}, **extra)  # fmt: skip


def test_a_non_finite_stop_saves_no_checkpoint_other_fatal_stops_do(tmp_path):
    nan = monitor_state(logs(1, grad_norm=float("nan")), 1)
    control = HealthMonitor(default_limits(), str(tmp_path), stop_on_fatal=True).on_log(
        None, nan, TrainerControl(should_save=True)
    )
    assert control.should_training_stop and not control.should_save
    dead = monitor_state(logs(3, reward_std=0.0, frac_reward_zero_std=1.0), 3)
    control = HealthMonitor(default_limits(patience=3), str(tmp_path), stop_on_fatal=True).on_log(
        None, dead, TrainerControl()
    )
    assert control.should_training_stop and control.should_save
    # health.jsonl stays strict JSON: the NaN is written as "nan".
    raised = [json.loads(line, parse_constant=pytest.fail)
              for line in (tmp_path / HEALTH_LOG).read_text().splitlines()]  # fmt: skip
    assert raised[0]["check"] == "non_finite" and raised[0]["value"] == "nan"


def nan_at_second_step(trainer):
    """The loss of the second optimizer step turns NaN (as an overflow would)."""
    compute_loss = trainer.compute_loss

    def poisoned(model, inputs, *args, **kwargs):
        loss = compute_loss(model, inputs, *args, **kwargs)
        return loss * float("nan") if trainer.state.global_step == 1 else loss

    trainer.compute_loss = poisoned


@pytest.mark.slow
def test_a_run_whose_loss_turns_nan_stops_without_saving_its_weights(tiny_model_dir, tmp_path):
    """The NaN shows as a fatal finding, the run stops (health_stop_on_fatal) with the checkpoint
    before it intact and nothing saved after it; the run record names it."""
    from conftest import RECIPE
    from grpo_kit import training

    out = tmp_path / "run"
    argv = ["--config", RECIPE, "--smoke", "--model_name_or_path", str(tiny_model_dir),
            "--output_dir", str(out), "--max_steps", "4", "--health_stop_on_fatal", "true",
            "--save_strategy", "steps", "--save_steps", "1"]  # fmt: skip
    trainer = training.run(None, argv, prepare=nan_at_second_step)
    assert trainer.state.global_step == 2
    assert [c.name for c in out.glob("checkpoint-*")] == ["checkpoint-1"]
    assert not (out / "adapter_model.safetensors").exists()  # no final model of NaN weights
    events = [json.loads(line) for line in (out / HEALTH_LOG).read_text().splitlines()]
    raised = [e for e in events if e["event"] == "raised" and e["check"] == "non_finite"]
    assert raised and raised[0]["severity"] == "fatal" and raised[0]["step"] == 2
    assert "grad_norm nan" in raised[0]["message"]
    record = json.loads((out / "run_record.json").read_text(), parse_constant=pytest.fail)
    assert record["status"] == "stopped by the health check (non_finite)"
    assert record["health"]["non_finite"]["severity"] == "fatal"
    assert record["final_metrics"]["grad_norm"] == "nan"


def test_the_phantom_gradient_message_names_the_rewards_that_vary():
    """Only the length reward varies: the message says so, and says nothing of format."""
    only_length = {spread_metric("acc"): 1.0, spread_metric("strict_format"): 1.0,
                   spread_metric("soft_overlong"): 0.0, "frac_reward_zero_std": 0.0}  # fmt: skip
    message = checks(logs(1, **only_length), correctness="acc")["correctness_spread"].message
    phantom = message.split("(phantom gradients)")[0]
    assert "soft_overlong still varies" in phantom and "format" not in phantom
    both = {**only_length, spread_metric("strict_format"): 0.5}
    message = checks(logs(1, **both), correctness="acc")["correctness_spread"].message
    assert "strict_format and soft_overlong still vary" in message
    # Spread metrics not logged (e.g. a reward model): no names guessed.
    bare = {spread_metric("acc"): 1.0, "frac_reward_zero_std": 0.0}
    message = checks(logs(1, **bare), correctness="acc")["correctness_spread"].message
    assert "the other rewards still vary" in message


def test_a_resumed_monitor_keeps_the_findings_of_its_checkpoint(tmp_path):
    """The active findings ride in the checkpoint's state; a resume does not raise them again,
    and the events a resume replays are dropped when health.jsonl is read."""
    from grpo_kit.callbacks.health import STATE_KEY, fired, read_events

    history = logs(3, reward_std=0.0, frac_reward_zero_std=1.0)
    first = HealthMonitor(default_limits(), str(tmp_path))
    state = monitor_state([], 0)
    first.on_train_begin(None, state, TrainerControl())
    for step in (1, 2, 3):
        state.log_history, state.global_step = history[:step], step
        first.on_log(None, state, TrainerControl())
    saved = json.loads(json.dumps(state.stateful_callbacks))  # as trainer_state.json keeps it
    assert [f["check"] for f in saved[STATE_KEY]["active"]] == ["reward_std"]
    # The run went on past the checkpoint (step 2) before it died: an event at step 3.
    first._write({"check": "entropy", "severity": "warning", "step": 3, "event": "raised"})
    resumed = HealthMonitor(default_limits(), str(tmp_path))
    state = monitor_state(history[:2], 2)
    state.stateful_callbacks = {STATE_KEY: saved[STATE_KEY]}
    resumed.on_train_begin(None, state, TrainerControl())
    assert set(resumed.active) == {"reward_std"}
    state.log_history, state.global_step = history, 3
    resumed.on_log(None, state, TrainerControl())
    events = read_events(tmp_path / HEALTH_LOG)
    assert [(e["event"], e["check"]) for e in events] == [
        ("started", None),
        ("raised", "reward_std"),
        ("started", None),
    ]  # the stale entropy event is gone, reward_std was not raised twice
    assert list(fired(events)) == ["reward_std"] and fired(events)["reward_std"]["active"]


# --- the guards' counts: rewards that raised or timed out, tool calls cut (issue 25 #4, #1) ---


def logged_row(step, calls):
    """A training log row as TRL makes it from `log_metric` calls: each metric's mean."""
    values: dict = {}
    for name, value in calls:
        values.setdefault(name, []).append(value)
    return {"step": step, "reward": 0.5, "reward_std": 0.3,
            **{name: sum(v) / len(v) for name, v in values.items()}}  # fmt: skip


def test_a_reward_that_raised_or_timed_out_warns_naming_it():
    """The real reward layer's counts (rewards/<name>/errors and /timeouts, logged on every
    call) reach the checks: a log where a guard scored a completion low warns, naming the
    reward and the fix; a log where every count is 0 raises nothing."""
    from grpo_kit.rewards import ERROR_METRIC, TIMEOUT_METRIC, reward

    @reward(low=0.0, high=1.0)
    def picky(completion: str) -> float:
        if completion == "boom":
            raise RecursionError("too deep")
        return 1.0

    @reward(low=0.0, high=1.0, time_budget=0.05)
    def slow(completion: str) -> float:
        while completion == "spin":
            pass
        return 1.0

    calls = []
    log = lambda name, value: calls.append((name, value))  # noqa: E731
    for completions in (["ok", "ok"], ["ok", "spin"]):
        picky(completions, log_metric=log)
        slow(completions, log_metric=log)
    quiet = logged_row(1, calls[: len(calls) // 2])
    assert quiet[ERROR_METRIC.format(name="picky")] == 0.0
    assert quiet[TIMEOUT_METRIC.format(name="slow")] == 0.0
    assert not {"reward_errors", "reward_timeouts"} & set(checks([quiet]))

    picky(["boom", "ok", "boom", "ok"], log_metric=log)
    found = checks([quiet, logged_row(2, calls)])
    errors, timeouts = found["reward_errors"], found["reward_timeouts"]
    assert errors.severity == timeouts.severity == "warning"
    assert "made reward picky raise" in errors.message and "slow" not in errors.message
    assert "make reward-debug --completions" in errors.message
    assert "training continues" in errors.message
    assert errors.value == pytest.approx(2 / 3)  # TRL's mean over the calls: (0 + 0 + 2) / 3
    assert "made reward slow time out" in timeouts.message and "picky" not in timeouts.message
    assert "time_budget" in timeouts.message and "make reward-debug" in timeouts.message


def test_two_rewards_that_raised_are_both_named():
    row = logs(1, **{"rewards/a/errors": 1.0, "rewards/b/errors": 0.0, "rewards/c/errors": 2.0})
    finding = checks(row)["reward_errors"]
    assert "made reward a and c raise" in finding.message and finding.value == 2.0
    assert "reward_errors" not in checks(logs(1, **{"rewards/a/errors": 0.0}))


def test_tool_calls_cut_by_the_time_budget_warn_with_the_fix():
    """`tools/budget_cuts`, as the tools task's `tool_call_errors` reward logs it (calls cut
    per rollout), warns above 0."""
    from grpo_kit.environments import BUDGET_CUTS_METRIC, ToolSettings, budget_cut_message
    from grpo_kit.starters.tools.rewards import tool_call_errors

    cut = str({"error": budget_cut_message(ToolSettings())})
    call = {"type": "function", "function": {"name": "run_python", "arguments": {"code": "1"}}}

    def rollout(*contents):
        turn = {"role": "assistant", "content": "", "tool_calls": [call] * len(contents)}
        return [turn, *({"role": "tool", "name": "run_python", "content": c} for c in contents)]

    calls = []
    tool_call_errors([rollout("1"), rollout("2")], log_metric=lambda *m: calls.append(m))
    quiet = logged_row(1, calls)
    assert quiet[BUDGET_CUTS_METRIC] == 0.0
    assert "tool_budget_cuts" not in checks([quiet])
    calls.clear()
    tool_call_errors([rollout("1", cut, cut), rollout("2")], log_metric=lambda *m: calls.append(m))
    finding = checks([quiet, logged_row(2, calls)])["tool_budget_cuts"]
    assert finding.severity == "warning" and finding.value == 1.0  # 2 cuts over 2 rollouts
    assert "tool calls ran out of time" in finding.message
    assert "max_tool_calling_iterations" in finding.message
    assert "tool_turn_seconds" in finding.message and "tool_rollout_seconds" in finding.message
