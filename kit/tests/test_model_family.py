"""The offline tiny model stands in for the real one: the real chat template, the special tokens
it writes, the same model class, and rewards that credit ideal completions as the model emits
them through that template (thinking prefilled or not)."""

from importlib import resources

import pytest

from {{ cookiecutter.package_name }} import inference, project
from {{ cookiecutter.package_name }}.tasks import TASK
from {{ cookiecutter.package_name }}.tools import reward_debug, tiny_model

REAL_TEMPLATE = bool(project.CHAT_TEMPLATE)
VENDORED = tiny_model.VENDORED_TEMPLATES / f"{project.CHAT_TEMPLATE}.jinja"


@pytest.mark.skipif(not REAL_TEMPLATE, reason="a custom model: its template is unknown offline")
def test_the_tiny_tokenizer_carries_the_real_models_chat_template(tiny_tokenizer):
    """Byte for byte the file TRL ships, and the copy TRL compares tokenizers against to
    recognise the model (trl.chat_template_utils). For a model TRL ships no template of, the
    checkpoint's own copy in tools/chat_templates/, as long as TRL still ships none."""
    from trl import chat_template_utils

    name = project.CHAT_TEMPLATE
    shipped = resources.files("trl") / "chat_templates" / f"{name}.jinja"
    if VENDORED.is_file():
        assert not shipped.is_file(), f"TRL now ships {name}.jinja: use it, delete {VENDORED}"
        assert tiny_tokenizer.chat_template == VENDORED.read_text(encoding="utf-8")
        return
    assert tiny_tokenizer.chat_template == shipped.read_text(encoding="utf-8")
    assert tiny_tokenizer.chat_template == getattr(chat_template_utils, f"{name}_chat_template")


def test_generation_stops_where_the_template_ends_a_turn(tiny_tokenizer, tiny_model_dir, recipe):
    """The first special token the template writes after an assistant's text is one the
    checkpoint's generation config stops on (TRL stops on those and the tokenizer's eos), so
    completions end where the model ends its turn instead of running to the length cap."""
    from transformers import GenerationConfig

    stops = GenerationConfig.from_pretrained(tiny_model_dir).eos_token_id
    stops = {stops} if isinstance(stops, int) else set(stops)
    kwargs = recipe.training.chat_template_kwargs or {}
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    text = tiny_tokenizer.apply_chat_template(messages, tokenize=False, **kwargs)
    after = tiny_tokenizer(text[text.rindex("Hello") + len("Hello") :], add_special_tokens=False)
    special = set(
        tiny_tokenizer.convert_tokens_to_ids(list(tiny_model.TOKENS[project.CHAT_TEMPLATE].all))
    )
    ends = [token for token in after["input_ids"] if token in special]
    assert ends and ends[0] in stops, (text, tiny_tokenizer.convert_ids_to_tokens(ends), stops)


def test_the_templates_special_tokens_are_single_tokens(tiny_tokenizer, sample_rows, recipe):
    """A prompt encodes each structural token of the template as one token, round-trips, and
    loses only those tokens when decoded the way TRL decodes completions."""
    tokens = tiny_model.TOKENS[project.CHAT_TEMPLATE]
    for token in tokens.all:
        assert len(tiny_tokenizer(token, add_special_tokens=False)["input_ids"]) == 1, token
    assert tiny_tokenizer.eos_token == tokens.eos
    kwargs = recipe.training.chat_template_kwargs or {}
    prompt = inference.prompt_texts(tiny_tokenizer, [sample_rows[0]["prompt"]], kwargs)[0]
    ids = tiny_tokenizer(prompt, add_special_tokens=False)["input_ids"]
    assert tiny_tokenizer.decode(ids) == prompt
    plain = tiny_tokenizer.decode(ids, skip_special_tokens=True)
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
    from {{ cookiecutter.package_name }}.environments import episodes

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


def test_ideal_completions_through_the_template_get_full_reward(
    tiny_tokenizer, sample_rows, recipe
):
    """Each sample row's ideal completion, as the model would emit it after this template's
    generation prompt (which may open `<think>`, close an empty thinking block or fold the
    system prompt), reaches the top of every reward of the recipe. An agent task's ideal
    rollout goes through the template and TRL's tool-call parser turn by turn."""
    from {{ cookiecutter.package_name }} import data

    kwargs = recipe.training.chat_template_kwargs or {}
    tools_of = data.row_tools(recipe.task)
    pairs = []
    for index, row in enumerate(sample_rows):
        ideal = TASK.ideal_completion(row, recipe.task)
        if isinstance(ideal, list):
            tools = tools_of(row)
            pairs.append(
                (index, emitted_rollout(tiny_tokenizer, row["prompt"], ideal, tools, kwargs))
            )
            continue
        pairs.append((index, emitted(tiny_tokenizer, row["prompt"], ideal, kwargs)))
    for scores in reward_debug.score(recipe, sample_rows, pairs):
        below = [
            (str(pairs[i][1])[:200], value)
            for i, value in enumerate(scores.values)
            if value is None or value < scores.high - 1e-9
        ]
        assert not below, f"{scores.name} (top {scores.high}) with {kwargs}: {below[:2]}"


def test_an_adapter_reloads_onto_the_class_trl_trains(tiny_model_dir, recipe, tmp_path):
    """TRL builds the class named in the checkpoint's config (a vision-language checkpoint keeps
    its towers); LoRA reaches only the language model, and the saved adapter loaded back for
    merge/infer/evaluate changes the outputs exactly as it did in training."""
    import torch
    from peft import LoraConfig, get_peft_model
    from trl.trainer.utils import create_model_from_path

    if not recipe.model.use_peft:
        pytest.skip("this tier's recipe fine-tunes every weight: no adapter to reload")
    model = create_model_from_path(str(tiny_model_dir), dtype="float32")
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
    reloaded = inference.load_model_for_inference(tmp_path / "adapter", "float32", "cpu")
    with torch.no_grad():
        expected = trained(input_ids=ids).logits
        got = reloaded(input_ids=ids).logits
    assert torch.allclose(expected, got, atol=1e-5)
