"""This project end to end: the recipe parses against the installed TRL, every reward is maxed by
your data's ideal completions and survives hostile ones, and the pipeline runs offline."""

import pytest


def test_the_recipe_parses_against_the_installed_trl(checks):
    assert checks.recipe.script.reward_funcs


def test_ideal_completions_reach_the_top_of_every_reward(checks):
    checks.ideal_completions_reach_the_top()


def test_rewards_never_fail_on_random_and_hostile_completions(checks):
    checks.rewards_never_fail()


def test_rewards_score_1mb_completions_fast(checks):
    checks.large_completions_are_fast()


@pytest.mark.slow
def test_smoke_pipeline_trains_merges_and_answers(checks, tmp_path, capsys):
    answers = checks.smoke(tmp_path / "smoke")
    assert len(answers) == 1 and answers[0].strip()
    assert (tmp_path / "smoke" / "merged" / "config.json").is_file()
    assert "merge check passed" in capsys.readouterr().out
