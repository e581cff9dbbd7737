"""A sequence-classification reward model as a reward, beside the functions (offline, tiny)."""

import pytest
from conftest import smoke_train
from grpo_kit.errors import UserError
from grpo_kit.training import check_reward_weights


@pytest.fixture(scope="module")
def tiny_reward_model(tmp_path_factory, project):
    from grpo_kit.offline.tiny_model import build_tiny_reward_model

    return build_tiny_reward_model(tmp_path_factory.mktemp("rm") / "reward-model", project)


def test_a_recipe_with_a_reward_model_trains_and_logs_its_reward(
    tiny_model_dir, tiny_reward_model, tmp_path, recipe
):
    weights = [str(w) for w in recipe.training.reward_weights] + ["0.5"]
    trainer = smoke_train(
        tiny_model_dir, tmp_path / "run", "--reward_model", str(tiny_reward_model),
        "--reward_weights", *weights,
    )  # fmt: skip
    logged = [row for row in trainer.state.log_history if "reward" in row]
    assert f"rewards/{tiny_reward_model.name}/mean" in logged[-1]


def test_weights_must_cover_the_reward_model_too():
    with pytest.raises(UserError, match="reward model"):
        check_reward_weights(["a", "b"], [1.0, 1.0], reward_model="some/rm")
    check_reward_weights(["a", "b"], [1.0, 1.0, 0.5], reward_model="some/rm")


def test_reward_debug_scores_the_reward_model_beside_the_functions(tiny_reward_model, capsys):
    from grpo_kit.commands import reward_debug

    assert reward_debug.debug(["--limit", "2", "--reward_model", str(tiny_reward_model)])
    assert tiny_reward_model.name in capsys.readouterr().out
