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


def test_health_verdicts_show_the_guards_counts():
    """A reward that raised or timed out, and (a tool run) calls cut by the time budget: their
    checks are in the recomputed verdicts, warned where the logs hold a count above 0."""
    rows = [{"step": i, "reward": 0.1 * i, "reward_std": 0.3, "rewards/acc/errors": 0.0,
             "rewards/acc/timeouts": float(i == 2)} for i in range(1, 4)]  # fmt: skip
    rows[0]["rewards/acc/errors"] = 1.0
    table = report.health_verdicts(rows, report.default_limits())
    assert "| reward_errors | warned at 1 logs (steps 1-1) |" in table
    assert "| reward_timeouts | warned at 1 logs (steps 2-2) |" in table
    assert "tool_budget_cuts" not in table  # not a tool run
    for row in rows:
        row.update({report.TOOL_CALLS: 2.0, report.TOOL_FAILURES: 0.1, "tools/budget_cuts": 0.0})
    rows[2]["tools/budget_cuts"] = 0.5
    table = report.health_verdicts(rows, report.default_limits())
    assert "| tool_budget_cuts | warned at 1 logs (steps 3-3) |" in table


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


# --- the health table is health.jsonl's (issues 26, 28, 29) ---


def health_log(path, *events):
    """health.jsonl as the monitor writes it: a `started` event, then `events`."""
    lines = [{"check": None, "event": "started", "step": 0, "active": []}, *events]
    (path / "health.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))


def raised(check, step, message="what to change", severity="warning"):
    return {"check": check, "severity": severity, "step": step, "value": 1.0, "limit": 0.8,
            "message": message, "event": "raised"}  # fmt: skip


def table_checks(summary: str) -> set[str]:
    """The checks in the report's health table (its rows' first cells)."""
    health = summary.split("## Health")[1].split("\n## ")[0]
    rows = [line for line in health.splitlines() if line.startswith("| ")]
    return {row.split("|")[1].strip() for row in rows[2:]}  # after the header and its rule


def test_the_health_table_lists_exactly_the_checks_that_fired(tmp_path):
    """The logs would trip the default clipped_ratio threshold, but the run's monitor (a smoke
    run's: clipping expected) never raised it; correctness_spread and sampling fired."""
    rows = rows_of(4, **{"completions/clipped_ratio": 0.9})
    run = synthetic_run(tmp_path / "run", rows, {"smoke": True})
    health_log(
        run,
        raised("correctness_spread", 1, "only soft_overlong still varies | phantom"),
        raised("sampling", 2),
        {"check": "sampling", "step": 3, "event": "cleared"},
    )
    summary = (
        report.report([str(run), "--output-dir", str(tmp_path / "r")]) / "report.md"
    ).read_text()
    assert table_checks(summary) == {"correctness_spread", "sampling"}
    assert "clipped_ratio" not in summary.split("## Health")[1].split("## Plots")[0]
    assert "| correctness_spread | warning | 1 time (step 1) | still active |" in summary
    assert "| sampling | warning | 1 time (step 2) | cleared at step 3 |" in summary
    assert "only soft_overlong still varies \\| phantom" in summary  # the monitor's own words
    assert "2 event(s) raised" in summary


def test_a_quiet_run_says_no_check_fired(tmp_path):
    run = synthetic_run(tmp_path / "run", rows_of(3))
    health_log(run)
    summary = (
        report.report([str(run), "--output-dir", str(tmp_path / "r")]) / "report.md"
    ).read_text()
    assert "No health check fired" in summary and table_checks(summary) == set()


def test_the_report_of_a_smoke_run_lists_exactly_the_checks_in_its_health_log(logged_run, tmp_path):
    out = report.report([str(logged_run), "--output-dir", str(tmp_path / "report")])
    summary = (out / "report.md").read_text()
    events = [json.loads(line) for line in (logged_run / "health.jsonl").read_text().splitlines()]
    fired = {e["check"] for e in events if e["event"] == "raised"}
    assert table_checks(summary) == fired
    assert "recomputed" not in summary


def test_nan_in_the_logs_shows_in_the_report(tmp_path):
    rows = rows_of(3)
    rows[2]["grad_norm"] = float("nan")
    rows[2]["entropy"] = None  # TRL: every value of the step was NaN
    run = synthetic_run(tmp_path / "run", rows)
    health_log(run, raised("non_finite", 3, "grad_norm nan, entropy nan", "fatal"))
    summary = (
        report.report([str(run), "--output-dir", str(tmp_path / "r")]) / "report.md"
    ).read_text()
    assert (
        "**NaN or infinite values in the logs**: `grad_norm` at step(s) 3; `entropy` at" in summary
    )
    assert "| non_finite | fatal | 1 time (step 3) | still active |" in summary


@pytest.mark.parametrize(
    ("recipe", "advice"),
    [
        ({"smoke": True, "log_completions": False}, "add `--log_completions true`"),
        ({"log_completions": True}, "although the run had `log_completions: true`"),
        ({"log_completions": False}, "set `log_completions: true` in the recipe"),
    ],
)
def test_the_completions_advice_fits_the_runs_recipe(tmp_path, recipe, advice):
    run = synthetic_run(tmp_path / "run", rows_of(2), recipe)
    summary = (
        report.report([str(run), "--output-dir", str(tmp_path / "r")]) / "report.md"
    ).read_text()
    completions = summary.split("## Completions")[1]
    assert advice in completions
    if recipe["log_completions"]:
        assert "set `log_completions: true`" not in completions
