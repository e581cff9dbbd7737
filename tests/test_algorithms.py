"""Algorithm presets: every field written with its paper, valid for the installed TRL, the same
set on every plan, switchable in configs/local.yaml, and each preset trains.

The backends' parity (the configuration Unsloth's patched trainer resolves from the same
presets) is checked in its environment: tests/test_unsloth_backend.py.
"""

import inspect
import json
import re
import sys

import pytest
import yaml
from conftest import bake_ok, run_in
from matrix import BASE, VALID

from grpo_template import algorithms, catalog, memory, recipe, tasks
from grpo_template.answers import AnswerError, Answers, validate
from grpo_template.derived import recipe_header

NAMES = list(algorithms.ALGORITHMS)


# The default model (Qwen3.5-2B) does not fit the cpu tier: its family's 0.8B does.
CPU_MODEL = "Qwen/Qwen3.5-0.8B"


def answers_for(algorithm, backend="transformers", tier="24GB", task="math", model=None):
    return Answers.from_context(
        {**BASE, "model": model or catalog.DEFAULT_MODEL, "gpu_tier": tier, "task_type": task,
         "backend": backend, "tracker": "none", "algorithm": algorithm}
    )  # fmt: skip


def rendered(answers):
    plan = answers.plan
    return recipe.render(plan, answers.tracker, recipe_header(answers), answers.algorithm)


@pytest.mark.parametrize("name", NAMES)
def test_every_preset_writes_every_field_with_a_one_line_reason_and_its_paper(name):
    algorithm = algorithms.get(name)
    keys = [key for key, _ in algorithm.settings]
    assert len(keys) == len(set(keys))
    assert set(algorithms.FIELDS) <= set(keys)
    assert re.fullmatch(r"\d{4}\.\d{4,5}", algorithm.arxiv)
    for key, setting in algorithm.settings:
        assert "\n" not in setting.why and len(setting.why) < 140, key
        assert re.search(r"arXiv:\d{4}\.\d{4,5}|not used|TIS|notion\.site", setting.why), key
    assert any(algorithm.arxiv in setting.why for _, setting in algorithm.settings)


def _trl_strings(function) -> str:
    return inspect.getsource(function)


@pytest.mark.parametrize("name", NAMES)
def test_preset_values_are_ones_the_installed_trl_implements(name):
    """Read from TRL 1.16's own source, not from a list written here."""
    from trl import GRPOTrainer

    values = algorithms.get(name).values()
    loss = _trl_strings(GRPOTrainer._compute_loss)
    scoring = _trl_strings(GRPOTrainer._generate_and_score_completions)
    assert f'"{values["loss_type"]}"' in loss
    assert f'"{values["importance_sampling_level"]}"' in loss
    assert f'"{values["multi_objective_aggregation"]}"' in scoring
    assert f'"{values["scale_rewards"]}"' in scoring
    assert f"'{values['vllm_importance_sampling_mode']}'" in scoring  # in its error message
    assert values["vllm_importance_sampling_clip_max"] >= 1.0
    assert 0.0 < values["top_entropy_quantile"] <= 1.0


def test_the_default_is_trls_default_loss():
    from trl import GRPOConfig

    assert algorithms.DEFAULT == "dapo" == GRPOConfig.loss_type
    assert list(algorithms.ALGORITHMS)[0] == algorithms.DEFAULT  # first choice: cookiecutter's


def test_every_algorithm_is_baked_for_every_backend_and_task():
    """The answer is cycled through the matrix (not multiplied): every algorithm still meets
    every backend and every task (tools is refused with Unsloth: answers.UNSLOTH_TOOLS)."""
    backends = {(c["backend"], c["algorithm"]) for c in VALID}
    assert backends == {(b, n) for b in ("transformers", "unsloth") for n in NAMES}
    task_names = {(c["algorithm"], c["task_type"]) for c in VALID}
    assert task_names == {(n, t) for n in NAMES for t in tasks.TASKS}


def test_an_unknown_algorithm_is_refused_with_the_choices():
    combo = {**BASE, "model": catalog.DEFAULT_MODEL, "task_type": "math", "gpu_tier": "24GB",
             "backend": "transformers", "tracker": "none", "algorithm": "ppo"}  # fmt: skip
    with pytest.raises(AnswerError, match="algorithm 'ppo' is not offered; choose one of: dapo"):
        validate(combo)


def test_a_replay_without_the_answer_gets_the_default():
    """Projects generated before the answer existed have none in their record."""
    context = {k: v for k, v in answers_for("gspo").__dict__.items() if k != "algorithm"}
    assert Answers.from_context(context).algorithm == algorithms.DEFAULT


@pytest.mark.parametrize("backend", ["transformers", "unsloth"])
@pytest.mark.parametrize("name", NAMES)
def test_the_recipe_holds_the_preset_and_nothing_else_changes(name, backend):
    answers = answers_for(name, backend)
    values = yaml.safe_load(rendered(answers))
    for key, value in algorithms.get(name).values().items():
        assert values[key] == value, key
    other = yaml.safe_load(rendered(answers_for(algorithms.DEFAULT, backend)))
    changed = {k for k in values.keys() | other.keys() if values.get(k) != other.get(k)}
    assert changed <= set(algorithms.PARITY_FIELDS)


@pytest.mark.parametrize("current", NAMES)
def test_local_yaml_lines_switch_an_existing_recipe_to_any_algorithm(current):
    generated = yaml.safe_load(rendered(answers_for(current)))
    for target in NAMES:
        local = yaml.safe_load("\n".join(algorithms.switch_lines(current, target)) or "{}")
        merged = {**generated, **local}
        for key, value in algorithms.get(target).values().items():
            assert merged[key] == value, (current, target, key)
        table = algorithms.readme_table(current)
        for line in algorithms.switch_lines(current, target):
            assert f"`{line}`" in table


def test_unsloth_recipes_state_the_vllm_share_unsloth_really_uses():
    """UNSLOTH_VLLM_STANDBY=1 (set by the generated modeling.py) makes Unsloth replace
    gpu_memory_utilization by its own share (unsloth_zoo/vllm_utils.py: 0.925/0.9/0.825/0.8/
    0.775/0.75 by a tenth of the card's GiB, x 0.95 on vLLM >= 0.11), so the recipe no longer
    writes a value that has no effect, and says which share applies."""
    assert memory.unsloth_standby_share(79.1) == 0.879  # >= 40 GiB
    assert memory.unsloth_standby_share(39.4) == 0.855  # A100-40GB
    assert memory.unsloth_standby_share(22.0) == 0.784  # 24 GB cards
    assert memory.unsloth_standby_share(14.6) == 0.76  # T4
    assert memory.unsloth_standby_share(8.0) == pytest.approx(0.7125, abs=1e-3)
    for combo in [c for c in VALID if c["backend"] == "unsloth"]:
        answers = Answers.from_context(combo)
        text = rendered(answers)
        assert "\ngpu_memory_utilization:" not in text
        if answers.plan.fast_inference:
            share = memory.unsloth_standby_share(answers.plan.tier.memory_gib)
            assert f"gives it {share:.0%}" in text


TRAIN_EACH = """
import json, sys
from grpo_kit import training
steps = {}
for path in sys.argv[1:]:  # the kit's trainer (the project ejects none)
    trainer = training.run(None, ["--config", path, "--smoke", "--max_steps", "1",
                                  "--output_dir", path + ".out"])
    args = trainer.args
    steps[path] = [trainer.state.global_step, args.loss_type, args.importance_sampling_level,
                   args.multi_objective_aggregation]
print(json.dumps(steps))
"""


@pytest.mark.slow
def test_every_algorithm_trains_a_step_with_the_installed_trl(cookies_session, tmp_path):
    """Each preset's loss, reward scaling and aggregation run in TRL 1.16 (one smoke step on
    the tiny model; the smoke layer leaves the algorithm fields as the recipe has them)."""
    project = bake_ok(cookies_session, project_slug="algo-train")
    paths = []
    for name in NAMES:
        path = tmp_path / f"{name}.yaml"
        path.write_text(rendered(answers_for(name, tier="cpu", model=CPU_MODEL)), encoding="utf-8")
        paths.append(str(path))
    result = run_in(project, sys.executable, "-c", TRAIN_EACH, *paths, timeout=900)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    steps = json.loads(result.stdout.strip().splitlines()[-1])
    for name, path in zip(NAMES, paths, strict=True):
        values = algorithms.get(name).values()
        expected = [1, values["loss_type"], values["importance_sampling_level"],
                    values["multi_objective_aggregation"]]  # fmt: skip
        assert steps[path] == expected, name


@pytest.mark.slow
def test_cruft_update_switches_the_algorithm_and_keeps_local_yaml(tmp_path):
    """The README's regeneration step: `cruft update --variables-to-update '{"algorithm": ...}'`
    rewrites the recipe's algorithm lines and leaves configs/local.yaml alone."""
    from test_cruft import cruft, git, template_repository

    template = template_repository(tmp_path)
    out = tmp_path / "projects"
    out.mkdir()
    assert cruft(out, "create", str(template), "--no-input").returncode == 0
    project = out / "my-grpo-project"
    git(project, "init", "-q")
    (project / "configs" / "local.yaml").write_text("max_steps: 7\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "generated")
    result = cruft(project, "update", "--variables-to-update", '{"algorithm": "dr_grpo"}', "-y")
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    values = yaml.safe_load((project / "configs" / "grpo.yaml").read_text())
    for key, value in algorithms.get("dr_grpo").values().items():
        assert values[key] == value, key
    assert (project / "configs" / "local.yaml").read_text() == "max_steps: 7\n"
