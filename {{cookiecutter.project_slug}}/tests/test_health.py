"""The health monitor: each check on crafted logs, and a real run whose reward never varies."""

import json

from {{ cookiecutter.package_name }}.training.health import HEALTH_LOG, assess, default_limits, limits_from

from conftest import smoke_train


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


def constant_reward(completions, **kwargs):
    return [1.0] * len(completions)


def test_a_run_whose_reward_never_varies_triggers_the_reward_std_warning(tiny_model_dir, tmp_path):
    trainer = smoke_train(
        tiny_model_dir, tmp_path / "run", "--reward_funcs", "tests.test_health.constant_reward",
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
