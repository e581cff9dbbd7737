"""Answer validation: one clear error per bad answer (the hook prints it and stops)."""

import pytest

from grpo_template.answers import AnswerError, validate

GOOD = {
    "project_name": "My GRPO Project",
    "project_slug": "my-grpo-project",
    "package_name": "my_grpo_project",
    "model": "Qwen/Qwen2.5-1.5B-Instruct",
    "custom_model_id": "n/a",
    "custom_model_params_b": "0",
    "task_type": "math",
    "gpu_tier": "24GB",
    "backend": "transformers",
    "tracker": "none",
}


def check(**changes):
    return validate({**GOOD, **changes})


def test_defaults_are_valid():
    answers = check()
    assert answers.plan.mode in ("full", "lora", "qlora")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"project_name": ""}, "project_name"),
        ({"project_name": "{{ 7 * 7 }}"}, "no quotes, braces or backslashes"),
        ({"project_name": 'x"""; import os; """'}, "project_name"),
        ({"project_name": "a\nb"}, "project_name"),
        ({"project_slug": "My Project"}, "project_slug"),
        ({"project_slug": "-bad"}, "project_slug"),
        ({"project_slug": "bad--slug"}, "project_slug"),
        ({"package_name": "1abc"}, "not a valid Python package name"),
        ({"package_name": "my-pkg"}, "not a valid Python package name"),
        ({"package_name": "class"}, "Python keyword"),
        ({"package_name": "match"}, "Python keyword"),
        ({"package_name": "json"}, "shadow"),
        ({"package_name": "datasets"}, "shadow"),
        ({"package_name": "trl"}, "shadow"),
        ({"model": "someone/unknown"}, "not offered"),
        ({"model": "custom", "custom_model_id": "not a hub id"}, "custom_model_id"),
        ({"model": "custom", "custom_model_id": "org/{{7*7}}"}, "custom_model_id"),
        ({"model": "custom", "custom_model_id": "org/m", "custom_model_params_b": "x"}, "billions"),
        (
            {"model": "custom", "custom_model_id": "org/m", "custom_model_params_b": "-3"},
            "billions",
        ),
        ({"task_type": "poetry"}, "task_type"),
        ({"gpu_tier": "8GB"}, "gpu_tier"),
        ({"backend": "jax"}, "backend"),
        ({"tracker": "mlflow"}, "tracker"),
        ({"model": "Qwen/Qwen3-8B", "gpu_tier": "cpu"}, "does not fit the cpu tier"),
        ({"gpu_tier": "multi-gpu", "num_gpus": "1"}, "num_gpus '1' must be a whole number from 2"),
        ({"gpu_tier": "multi-gpu", "num_gpus": "eight"}, "num_gpus"),
        ({"gpu_tier": "multi-gpu", "num_gpus": "64"}, "num_gpus"),
        ({"gpu_tier": "multi-node", "num_gpus": "8", "num_nodes": "1"}, "num_nodes"),
    ],
)
def test_bad_answers_are_refused_with_a_clear_message(changes, message):
    with pytest.raises(AnswerError, match=message):
        check(**changes)


def test_a_refusal_says_what_would_fit():
    with pytest.raises(AnswerError) as err:
        check(model="Qwen/Qwen3-8B", gpu_tier="cpu")
    text = str(err.value)
    assert "GiB" in text and "bigger tier" in text and "smaller model" in text


def test_custom_model_is_accepted_with_an_id_and_size():
    answers = check(
        model="custom",
        custom_model_id="mistralai/Mistral-7B-Instruct-v0.3",
        custom_model_params_b="7.2",
    )
    assert answers.model_spec.estimated
    assert answers.plan.model.hub_id == "mistralai/Mistral-7B-Instruct-v0.3"


def test_gpu_counts_only_matter_for_the_multi_gpu_tiers():
    assert check(num_gpus="1").plan.processes == 1
    for wrong in ("4", "not a number"):  # a count on a one-GPU tier is refused, not ignored
        with pytest.raises(AnswerError, match="does not apply to the 24GB tier"):
            check(num_gpus=wrong)
    multi = check(gpu_tier="multi-gpu", num_gpus="4").plan
    assert multi.vllm_mode == "server" and multi.processes + multi.vllm_server_gpus == 4
    nodes = check(gpu_tier="multi-node", num_gpus="8", num_nodes="4").plan
    assert nodes.processes == 32 and nodes.vllm_mode == "colocate"


@pytest.mark.parametrize("tier", ["multi-gpu", "multi-node"])
def test_unsloth_is_refused_on_multi_gpu_tiers_pointing_to_transformers(tier):
    with pytest.raises(AnswerError) as err:
        check(backend="unsloth", gpu_tier=tier, num_gpus="8", num_nodes="2")
    text = str(err.value)
    assert "backend=unsloth" in text and "backend=transformers" in text and "\n" not in text


@pytest.mark.parametrize("tier", ["cpu", "16GB", "24GB", "48GB", "80GB", "141GB"])
def test_unsloth_is_offered_on_cpu_and_every_single_gpu_tier(tier):
    model = "Qwen/Qwen2.5-0.5B-Instruct" if tier == "cpu" else GOOD["model"]
    answers = check(backend="unsloth", gpu_tier=tier, model=model)
    assert answers.plan.backend == "unsloth"


@pytest.mark.parametrize(
    "model",
    [
        "Qwen/Qwen3.5-2B",
        "google/gemma-4-E2B-it",
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    ],
)
def test_unsloth_is_refused_for_models_its_backend_cannot_train(model):
    with pytest.raises(AnswerError) as err:
        check(backend="unsloth", gpu_tier="80GB", model=model)
    text = str(err.value)
    assert f"backend=unsloth is not offered for {model}" in text
    assert "backend=transformers" in text and "\n" not in text


def test_the_new_models_are_offered_with_the_transformers_backend():
    for model in ("Qwen/Qwen3.5-2B", "google/gemma-4-E2B-it", "LiquidAI/LFM2.5-1.2B-Instruct"):
        assert check(model=model).plan.model.hub_id == model
    assert check(model="HuggingFaceTB/SmolLM3-3B", backend="unsloth").plan.backend == "unsloth"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"model": "google/gemma-3-1b-it"}, "cannot render and parse tool calls"),
        ({"model": "microsoft/Phi-4-mini-instruct"}, "choose one of: Qwen/Qwen2.5-0.5B-Instruct"),
        (
            {"model": "custom", "custom_model_id": "org/model", "custom_model_params_b": "1"},
            "a custom model's chat template is unknown",
        ),
        ({"model": "Qwen/Qwen3-0.6B", "backend": "unsloth"}, "with backend=unsloth"),
    ],
)
def test_the_tools_task_is_refused_where_trl_cannot_train_tool_calls(changes, message):
    with pytest.raises(AnswerError, match="task_type=tools is not offered") as caught:
        check(task_type="tools", **changes)
    assert message in str(caught.value)


def test_the_tools_task_is_refused_right_after_the_task_question():
    from grpo_template.answers import validate_early

    early = {k: v for k, v in GOOD.items() if k not in ("backend", "tracker")}
    with pytest.raises(AnswerError, match="task_type=tools is not offered"):
        validate_early({**early, "model": "google/gemma-3-1b-it", "task_type": "tools"})
    validate_early({**early, "task_type": "tools"})  # a model TRL trains tool calls with


def test_the_tools_plan_caps_tool_turns_and_budgets_their_results():
    from grpo_template import recipe, tasks

    plan = check(task_type="tools", gpu_tier="80GB").plan
    values = recipe.values(plan, "none")
    assert values["max_tool_calling_iterations"] == tasks.TOOLS.tool_iterations
    assert tasks.agent_completion_tokens(100, 50, 3) == 100 * 4 + 50 * 3
    # The completion holds the exchange: longer than a single-turn answer of the same model.
    assert (
        plan.max_completion_length
        > check(task_type="custom", gpu_tier="80GB").plan.max_completion_length
    )


# The questions in the order cookiecutter asks them, and good answers to each.
QUESTIONS = [
    *("project_name", "project_slug", "package_name", "model", "custom_model_id"),
    *("custom_model_params_b", "task_type", "gpu_tier", "num_gpus", "num_nodes", "backend"),
]
ANSWERED = {**GOOD, "num_gpus": "1", "num_nodes": "1"}


@pytest.mark.parametrize(
    ("question", "given", "message"),
    [
        ("project_name", {"project_name": "  "}, "project_name is empty: give the project a name"),
        ("project_slug", {"project_slug": ""}, "project_slug is empty: use 2-40 lowercase"),
        ("package_name", {"package_name": " "}, "package_name is empty: use 2-40 lowercase"),
        ("package_name", {"package_name": "json"}, "shadow"),
        ("custom_model_id", {"model": "custom", "custom_model_id": "your-org/your-model"},
         "still the placeholder"),
        ("custom_model_params_b", {"model": "custom", "custom_model_params_b": "x"}, "billions"),
        ("task_type", {"model": "google/gemma-3-1b-it", "task_type": "tools"},
         "task_type=tools is not offered"),
        ("num_gpus", {"gpu_tier": "24GB", "num_gpus": "4"}, "this tier has one GPU: answer 1"),
        ("num_gpus", {"gpu_tier": "cpu", "num_gpus": "2"}, "the CPU of one machine: answer 1"),
        ("num_gpus", {"gpu_tier": "multi-gpu", "num_gpus": "1"}, "whole number from 2"),
        ("num_nodes", {"gpu_tier": "multi-node", "num_nodes": "1"}, "num_nodes '1'"),
    ],
)  # fmt: skip
def test_each_answer_is_checked_with_the_answers_given_so_far(question, given, message):
    """The check that runs right after a question reads only the answers given so far."""
    from grpo_template.answers import check_answer

    before = QUESTIONS[: QUESTIONS.index(question)]
    so_far = {q: ANSWERED[q] for q in before}
    with pytest.raises(AnswerError, match=message) as caught:
        check_answer(question, {**so_far, **given})
    assert "\n" not in str(caught.value) and "leave num_gpus out" not in str(caught.value)


def test_good_answers_pass_every_check_as_they_are_given():
    from grpo_template.answers import CHECKS_AFTER, check_answer

    assert set(CHECKS_AFTER) <= set(QUESTIONS)
    for at, question in enumerate(QUESTIONS):
        if question in CHECKS_AFTER:
            check_answer(question, {q: ANSWERED[q] for q in QUESTIONS[: at + 1]})
