"""Report: plots from trainer_state.json, a summary with health verdicts, completions."""

import json

import pytest
from conftest import load
from grpo_kit.commands import report


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


def synthetic_run(path, rows, recipe=None):
    """A run folder holding only what the report reads: trainer_state.json (and the run
    record's recipe, when given)."""
    path.mkdir(parents=True)
    (path / "trainer_state.json").write_text(json.dumps({"log_history": rows}))
    if recipe is not None:
        (path / "run_record.json").write_text(json.dumps({"recipe": recipe}))
    return path


def rows_of(n, **values):
    return [{"step": i + 1, "reward": 0.1 * i, "reward_std": 0.3, "learning_rate": 1e-6,
             **values} for i in range(n)]  # fmt: skip


def test_a_tool_run_gets_a_tool_use_plot_and_summary(tmp_path, projects, monkeypatch):
    """A run of the tools task (its project's task, run from its folder)."""
    monkeypatch.chdir(projects("tools"))
    task = load(projects("tools")).task
    rows = rows_of(6, **{report.TOOL_CALLS: 3.0, report.TOOL_FAILURES: 0.6})
    run = synthetic_run(tmp_path / "run", rows, {"max_tool_calling_iterations": 3})
    assert report.limits_for(run, task).max_tool_calling_iterations == 3  # from the run record
    out = report.report([str(run), "--output-dir", str(tmp_path / "report")])
    image = out / report.TOOL_PLOT
    assert image.is_file() and image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = (out / "report.md").read_text()
    assert "## Tool use" in summary and "max_tool_calling_iterations 3" in summary
    assert "Failed calls: 60% of calls at the first log" in summary
    assert f"![tool_use]({report.TOOL_PLOT})" in summary
    # Calls at the cap and most calls failing in every log: both verdicts say so.
    assert "| tool_call_cap | warned at" in summary and "| tool_failures | warned at" in summary
    assert "| no_tool_calls | ok |" in summary


def test_a_run_without_tool_metrics_gets_no_tool_plot(tmp_path):
    run = synthetic_run(tmp_path / "run", rows_of(6))
    out = report.report([str(run), "--output-dir", str(tmp_path / "report")])
    assert (out / "reward.png").is_file()
    assert not (out / report.TOOL_PLOT).exists()
    summary = (out / "report.md").read_text()
    assert "## Tool use" not in summary and "no_tool_calls" not in summary
    assert report.plot_tools(rows_of(3), tmp_path, report.default_limits()) is None


def test_the_tool_summary_without_a_cap_says_so():
    rows = rows_of(3)
    for row, calls in zip(rows, [0.0, 1.0, 2.0], strict=True):
        row[report.TOOL_CALLS] = calls
    line = report.tool_summary(rows, report.default_limits())
    assert "0 at step 1, 2 at step 3" in line and "no max_tool_calling_iterations" in line
