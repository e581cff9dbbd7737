"""The offline tiny model stands in for the real one, for every model family the kit supports: the
real chat template, the special tokens it writes, the same model class, and rewards that credit
ideal completions as the model emits them through that template (thinking prefilled or not).

Each family is a tiny architecture (grpo_kit.offline.tiny_model.ARCHITECTURES) with its chat
template (a TOKENS name), the LoRA targets and the thinking switch its recipe is generated with
(as grpo-template's catalog writes them into [tool.grpo] and configs/grpo.yaml); "custom" is a
model the template does not know: the qwen2 stand-in with the ChatML stand-in template. Every
check runs for every family; those that train (the smoke pipeline) or run a sandbox per
completion (the code and tools tasks' rewards) are marked slow.
"""

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import pytest
from conftest import CPU_RECIPE, TASKS, TOOLS_RECIPE, chdir, make_project, rows_of, sample_recipe
from grpo_kit import generation
from grpo_kit.commands import reward_debug
from grpo_kit.offline import tiny_model

# LoRA targets, as the catalog names them (a one-item list is one regex).
ALL_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
LANGUAGE_MODEL_ONLY = [
    r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"
]
QWEN3_5_TARGETS = [
    r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj|in_proj_qkv|in_proj_z|out_proj"
    r"|gate_proj|up_proj|down_proj)"
]
PHI3_TARGETS = ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]
LFM2_TARGETS = ["q_proj", "k_proj", "v_proj", "out_proj", "in_proj", "w1", "w2", "w3"]
NEMOTRON_H_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "up_proj", "down_proj", "in_proj"]
# The templates TRL trains tool calls with: the tools task is offered with these only.
TOOL_CALLING_TEMPLATES = {
    "qwen2_5", "qwen3", "qwen3_5_think", "qwen3_5_nothink", "llama3_1", "llama3_2", "gemma4_v5",
    "lfm2_2_5_v2", "nemotron_3_nano",
}  # fmt: skip


@dataclass(frozen=True)
class Family:
    arch: str  # tiny_model.ARCHITECTURES
    template: str  # tiny_model.TOKENS ("": the ChatML stand-in of a custom model)
    targets: list[str]
    thinking: bool = False  # the model thinks by default
    switch: bool = False  # its template has the enable_thinking switch

    def chat_template_kwargs(self, task) -> dict:
        """The recipe's: thinking on where the model thinks and the task's answer has a
        reasoning block (a JSON answer or a tool call cannot follow an open <think>)."""
        if not self.switch:
            return {}
        return {"enable_thinking": self.thinking and "<think>" in task.system_prompt}


FAMILIES = {
    "qwen2.5": Family("qwen2", "qwen2_5", ALL_LINEAR),
    "qwen3": Family("qwen3", "qwen3", ALL_LINEAR, thinking=True, switch=True),
    "qwen3.5-small": Family("qwen3_5", "qwen3_5_nothink", QWEN3_5_TARGETS, switch=True),
    "qwen3.5": Family("qwen3_5", "qwen3_5_think", QWEN3_5_TARGETS, thinking=True, switch=True),
    "llama3.2": Family("llama", "llama3_2", ALL_LINEAR),
    "llama3.1": Family("llama", "llama3_1", ALL_LINEAR),
    "gemma3-text": Family("gemma3_text", "gemma3", ALL_LINEAR),
    "gemma3-multimodal": Family("gemma3", "gemma3", LANGUAGE_MODEL_ONLY),
    "phi4-mini": Family("phi3", "phi4_mini", PHI3_TARGETS),
    "smollm3": Family("smollm3", "smollm3", ALL_LINEAR, thinking=True, switch=True),
    "smollm2": Family("llama", "smollm2", ALL_LINEAR),
    "lfm2.5": Family("lfm2", "lfm2_2_5_v2", LFM2_TARGETS),
    "gemma4": Family("gemma4", "gemma4_v5", LANGUAGE_MODEL_ONLY, switch=True),
    "nemotron-h": Family("nemotron_h", "nemotron_3_nano", NEMOTRON_H_TARGETS, True, True),
    "custom": Family("qwen2", "", ["all-linear"]),
}
# (family, task) pairs a project can have: the tools task needs a tool-calling template.
FAMILY_TASKS = [
    (family, task)
    for family in FAMILIES
    for task in TASKS
    if task != "tools" or FAMILIES[family].template in TOOL_CALLING_TEMPLATES
]
# Tasks whose rewards run programs or tools (a sandbox per completion): on every family, slow.
COSTLY_TASKS = ("code", "tools")


def test_the_families_cover_every_architecture_and_template():
    assert {f.arch for f in FAMILIES.values()} == set(tiny_model.ARCHITECTURES)
    assert {f.template for f in FAMILIES.values()} == set(tiny_model.TOKENS)


def family_recipe(family: Family, task) -> str:
    """configs/grpo.yaml of the family's project: the CPU recipe with its LoRA targets, its
    thinking switch (JSON is YAML) and a generated recipe's completion length (the sample's
    ideal code answers are longer than the test recipe's 64 tokens: soft_overlong would cut
    them)."""
    body = CPU_RECIPE.replace(
        "lora_target_modules: all-linear", f"lora_target_modules: {json.dumps(family.targets)}"
    ).replace("max_completion_length: 64", "max_completion_length: 1024")
    kwargs = family.chat_template_kwargs(task)
    if kwargs:
        body += f"chat_template_kwargs: {json.dumps(kwargs)}\n"
    return body + (TOOLS_RECIPE if task.name == "tools" else "")


@dataclass(frozen=True)
class Case:
    root: Path
    recipe: object  # the recipe on the sample data
    model_dir: Path  # the family's tiny model

    @property
    def tokenizer(self):
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(self.model_dir)


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    """`cases(family, task)`: the family's project of that task and its tiny model (an agent
    task's tokenizer also learns its rollouts, as the smoke run builds it), made once."""
    from importlib import import_module

    made: dict[tuple[str, str], Case] = {}

    def get(family: str, task: str = "math") -> Case:
        if (family, task) not in made:
            spec = FAMILIES[family]
            task_object = import_module(f"grpo_kit.starters.{task}.task").TASK
            root = make_project(
                tmp_path_factory.mktemp(f"{family}-{task}"), task, tiny_arch=spec.arch,
                chat_template=spec.template, recipe=family_recipe(spec, task_object),
            )  # fmt: skip
            with chdir(root):
                recipe = sample_recipe(root)
                model = tiny_model.project_tiny_model(root / "tiny", recipe.project, recipe=recipe)
            made[family, task] = Case(root, recipe, model)
        return made[family, task]

    return get


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_tiny_tokenizer_carries_the_real_models_chat_template(family, cases):
    """Byte for byte the file TRL ships, and the copy TRL compares tokenizers against to
    recognise the model (trl.chat_template_utils). For a model TRL ships no template of, the
    checkpoint's own copy in offline/chat_templates/, as long as TRL still ships none. A custom
    model (its template is unknown offline) gets the ChatML stand-in."""
    from trl import chat_template_utils

    name = FAMILIES[family].template
    tokenizer = cases(family).tokenizer
    if not name:
        assert tokenizer.chat_template == tiny_model.STAND_IN_TEMPLATE.read_text(encoding="utf-8")
        return
    vendored = tiny_model.VENDORED_TEMPLATES / f"{name}.jinja"
    shipped = resources.files("trl") / "chat_templates" / f"{name}.jinja"
    if vendored.is_file():
        assert not shipped.is_file(), f"TRL now ships {name}.jinja: use it, delete {vendored}"
        assert tokenizer.chat_template == vendored.read_text(encoding="utf-8")
        return
    assert tokenizer.chat_template == shipped.read_text(encoding="utf-8")
    assert tokenizer.chat_template == getattr(chat_template_utils, f"{name}_chat_template")


@pytest.mark.parametrize("family", list(FAMILIES))
def test_generation_stops_where_the_template_ends_a_turn(family, cases):
    """The first special token the template writes after an assistant's text is one the
    checkpoint's generation config stops on (TRL stops on those and the tokenizer's eos), so
    completions end where the model ends its turn instead of running to the length cap."""
    from transformers import GenerationConfig

    case = cases(family)
    tokenizer = case.tokenizer
    stops = GenerationConfig.from_pretrained(case.model_dir).eos_token_id
    stops = {stops} if isinstance(stops, int) else set(stops)
    kwargs = case.recipe.training.chat_template_kwargs or {}
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    text = tokenizer.apply_chat_template(messages, tokenize=False, **kwargs)
    after = tokenizer(text[text.rindex("Hello") + len("Hello") :], add_special_tokens=False)
    template = FAMILIES[family].template
    special = set(tokenizer.convert_tokens_to_ids(list(tiny_model.TOKENS[template].all)))
    ends = [token for token in after["input_ids"] if token in special]
    assert ends and ends[0] in stops, (text, tokenizer.convert_ids_to_tokens(ends), stops)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_templates_special_tokens_are_single_tokens(family, cases):
    """A prompt encodes each structural token of the template as one token, round-trips, and
    loses only those tokens when decoded the way TRL decodes completions."""
    case = cases(family)
    tokenizer, recipe = case.tokenizer, case.recipe
    tokens = tiny_model.TOKENS[FAMILIES[family].template]
    for token in tokens.all:
        assert len(tokenizer(token, add_special_tokens=False)["input_ids"]) == 1, token
    assert tokenizer.eos_token == tokens.eos
    kwargs = recipe.training.chat_template_kwargs or {}
    sample_rows = rows_of(recipe)
    prompt = generation.prompt_texts(tokenizer, [sample_rows[0]["prompt"]], kwargs)[0]
    ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == prompt
    plain = tokenizer.decode(ids, skip_special_tokens=True)
    assert not any(token in plain for token in tokens.special)


def emitted(tokenizer, messages: list[dict], ideal: str, kwargs: dict) -> str:
    """What the model writes after the generation prompt for an ideal answer, decoded as TRL
    decodes completions: the template's own rendering of the turn when it extends the prompt
    (minus any `<think>` the prompt already opened), else the ideal text after the prefill."""
    prompt = tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=False, **kwargs
    )
    turn = [*messages, {"role": "assistant", "content": ideal}]
    full = tokenizer.apply_chat_template(turn, tokenize=False, **kwargs)
    if full.startswith(prompt):
        text = full[len(prompt) :]
    else:  # the template re-renders a finished turn (e.g. a prefilled empty thinking block)
        text = ideal
        head = ideal.lstrip()
        for size in range(len(head), 0, -1):  # the ideal's start that the prompt already holds
            if head[:size].strip() and prompt.rstrip().endswith(head[:size].rstrip()):
                text = head[size:]
                break
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return tokenizer.decode(ids, skip_special_tokens=True)


def emitted_rollout(tokenizer, messages: list[dict], rollout: list[dict], tools, kwargs):
    """An agent's ideal rollout as TRL sees it: each assistant turn rendered by the chat
    template TRL trains tool calls with (after the exchange so far, tools listed), tokenized
    and parsed back with TRL's `parse_response`; the tool results as they are."""
    from grpo_kit.environments import episodes

    episodes.ready_for_tools(tokenizer)
    from trl.chat_template_utils import parse_response

    kwargs = episodes.chat_kwargs(tokenizer, kwargs)
    seen: list[dict] = []
    for message in rollout:
        if message["role"] != "assistant":
            seen.append(message)
            continue
        before = tokenizer.apply_chat_template(
            messages + seen, tools=tools, add_generation_prompt=True, tokenize=False, **kwargs
        )
        after = tokenizer.apply_chat_template(
            messages + seen + [message], tools=tools, tokenize=False, **kwargs
        )
        assert after.startswith(before), "the template TRL trains with must extend the prompt"
        ids = tokenizer(after[len(before) :], add_special_tokens=False)["input_ids"]
        prefix = tokenizer(before, add_special_tokens=False)["input_ids"]
        seen.append(parse_response(tokenizer, ids, prefix=prefix, tools=tools))
    return seen


@pytest.mark.parametrize(
    ("family", "task"),
    [
        pytest.param(*pair, marks=[pytest.mark.slow] if pair[1] in COSTLY_TASKS else [])
        for pair in FAMILY_TASKS
    ],
)
def test_ideal_completions_through_the_template_get_full_reward(family, task, cases):
    """Each sample row's ideal completion, as the model would emit it after this template's
    generation prompt (which may open `<think>`, close an empty thinking block or fold the
    system prompt), reaches the top of every reward of the recipe. An agent task's ideal
    rollout goes through the template and TRL's tool-call parser turn by turn."""
    from grpo_kit import data

    case = cases(family, task)
    tokenizer, recipe = case.tokenizer, case.recipe
    the_task = recipe.project.task
    kwargs = recipe.training.chat_template_kwargs or {}
    tools_of = data.row_tools(recipe.task, the_task)
    sample_rows = rows_of(recipe)
    pairs = []
    with chdir(case.root):
        for index, row in enumerate(sample_rows):
            ideal = the_task.ideal_completion(row, recipe.task)
            if isinstance(ideal, list):
                tools = tools_of(row)
                pairs.append(
                    (index, emitted_rollout(tokenizer, row["prompt"], ideal, tools, kwargs))
                )
                continue
            pairs.append((index, emitted(tokenizer, row["prompt"], ideal, kwargs)))
        scored = reward_debug.score(recipe, sample_rows, pairs)
    for scores in scored:
        if scores.judged:  # a judge model's opinion (no server here): held to no top
            continue
        below = [
            (str(pairs[i][1])[:200], value)
            for i, value in enumerate(scores.values)
            if value is None or value < scores.high - 1e-9
        ]
        assert not below, f"{scores.name} (top {scores.high}) with {kwargs}: {below[:2]}"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_an_adapter_reloads_onto_the_class_trl_trains(family, cases, tmp_path):
    """TRL builds the class named in the checkpoint's config (a vision-language checkpoint keeps
    its towers); LoRA reaches only the language model, and the saved adapter loaded back for
    merge/infer/evaluate changes the outputs exactly as it did in training."""
    import torch
    from peft import LoraConfig, get_peft_model
    from trl.trainer.utils import create_model_from_path

    case = cases(family)
    recipe = case.recipe
    assert recipe.model.use_peft
    model = create_model_from_path(str(case.model_dir), dtype="float32")
    assert type(model).__name__ == model.config.architectures[0]
    # The recipe's targets as TRL's ModelConfig holds them (a one-item list is one regex).
    config = LoraConfig(
        r=4, target_modules=recipe.model.lora_target_modules, init_lora_weights=False
    )
    trained = get_peft_model(model, config)
    adapted = [name for name, module in trained.named_modules() if hasattr(module, "lora_A")]
    assert adapted
    towers = ("visual", "vision_tower", "audio_tower", "multi_modal_projector", "embed_vision")
    assert not [name for name in adapted if any(tower in name for tower in towers)]
    trained.save_pretrained(tmp_path / "adapter")
    ids = torch.tensor([[1, 2, 3, 4, 5, 6]])
    reloaded = generation.load_model_for_inference(tmp_path / "adapter", "float32", "cpu")
    with torch.no_grad():
        expected = trained(input_ids=ids).logits
        got = reloaded(input_ids=ids).logits
    assert torch.allclose(expected, got, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_smoke_pipeline_trains_merges_and_answers(family, cases, tmp_path, capsys):
    """`make smoke` for the family: the tiny model trains two steps with the family's LoRA
    targets and template, merges (with its check) and answers."""
    from grpo_kit.commands import smoke

    case = cases(family)
    output = tmp_path / "smoke"
    with chdir(case.root):
        answers = smoke.pipeline(
            ["--model_name_or_path", str(case.model_dir), "--output_dir", str(output)]
        )
    assert len(answers) == 1 and answers[0].strip()
    assert (output / "merged" / "config.json").is_file()
    assert "merge check passed" in capsys.readouterr().out


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_recipes_lora_targets_are_kept_for_the_model_they_were_written_for(family, cases):
    """The catalog's targets select linear layers of the family's own model: kept as they are."""
    from grpo_kit.backends import transformers as backend

    case = cases(family)
    targets = case.recipe.model.lora_target_modules  # as TRL's ModelConfig holds them
    found = backend.model_modules(str(case.model_dir))
    assert found is not None
    name, modules = found
    assert backend.lora_targets(targets, name, modules, str(case.model_dir)) == targets


@pytest.mark.parametrize(
    ("project_family", "model_family", "expected"),
    [
        ("qwen3.5", "llama3.2", "all-linear"),  # `make try MODEL=<SmolLM2 folder>` (issue 26)
        ("phi4-mini", "qwen2.5", "all-linear"),
        ("qwen2.5", "gemma3-multimodal", "language model"),  # the names would adapt the tower
        ("qwen3.5", "gemma3-multimodal", None),  # its language-model regex fits Gemma 3: kept
        ("gemma4", "llama3.2", "all-linear"),
    ],
)
def test_lora_targets_follow_the_model_actually_loaded(
    project_family, model_family, expected, cases, caplog
):
    """A recipe generated for one family trains another family's model (--model_name_or_path,
    `make try MODEL=...`): targets that select none of its layers fall back to `all-linear`,
    or, for a multimodal model, every linear layer of its language model (never a tower), said
    in one line; PEFT then adapts the model instead of raising NoMatchingPeftModuleError."""
    import copy
    import logging

    from grpo_kit.backends import transformers as backend
    from peft import get_peft_model
    from trl.trainer.utils import create_model_from_path

    recipe = cases(project_family).recipe
    other = cases(model_family).model_dir
    model_args = copy.copy(recipe.model)
    model_args.model_name_or_path = str(other)
    training = copy.copy(recipe.training)
    moved = recipe._replace(model=model_args, training=training)
    with caplog.at_level(logging.WARNING, logger="grpo_kit"):
        config = backend.trainer_model(moved)["peft_config"]
    targets = config.target_modules
    if expected is None:
        assert targets == recipe.model.lora_target_modules or set(targets) == set(
            recipe.model.lora_target_modules
        )
        assert "LoRA targets" not in caplog.text
    elif expected == "all-linear":
        assert targets == "all-linear"
        assert f"select no layer of {other}" in caplog.text and "using all-linear" in caplog.text
    else:
        assert isinstance(targets, str) and targets.startswith(".*language_model.*")
        assert "select no layer" in caplog.text
    model = create_model_from_path(str(other), dtype="float32")
    adapted = [n for n, m in get_peft_model(model, config).named_modules() if hasattr(m, "lora_A")]
    towers = ("visual", "vision_tower", "audio_tower", "multi_modal_projector", "embed_vision")
    assert adapted and not [n for n in adapted if any(t in n for t in towers)]
