"""Report: plots from trainer_state.json, a summary with health verdicts, completions."""

import pytest

from {{ cookiecutter.package_name }}.tools import report


def test_report_writes_plots_and_a_summary(logged_run, tmp_path):
    out = report.report([str(logged_run), "--output-dir", str(tmp_path / "report")])
    for name in ("reward", "reward_std", "entropy", "completion_length", "clipped_ratio",
                 "learning_rate"):  # fmt: skip
        image = out / f"{name}.png"
        assert image.is_file() and image.stat().st_size > 1000, name
        assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (out / "kl.png").exists()  # beta is 0: TRL logs no kl
    summary = (out / "report.md").read_text()
    for section in ("## Metrics", "## Health", "## Plots", "## Completions"):
        assert section in summary
    assert "| reward_std |" in summary and "**best**" in summary and "**worst**" in summary


def test_a_run_without_logs_is_one_clear_error(tmp_path):
    with pytest.raises(report.UserError, match="no trainer_state.json"):
        report.report([str(tmp_path)])


def test_health_verdicts_list_every_check():
    rows = [{"step": i, "reward": 0.5, "reward_std": 0.0, "frac_reward_zero_std": 1.0}
            for i in range(1, 4)]  # fmt: skip
    table = report.health_verdicts(rows, report.default_limits())
    assert "| reward_std | warned at 3 logs (steps 1-3) |" in table
    assert "| kl | ok |" in table
