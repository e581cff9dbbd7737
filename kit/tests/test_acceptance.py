"""The GPU acceptance run's kit side, on the CPU: random-weight models of a catalog entry's exact
shape (parameter counts checked against the model cards' figures) with the project's tokenizer,
and the table of peak vs estimate."""

import json

import pytest
from conftest import load
from grpo_kit.commands import acceptance
from grpo_kit.errors import UserError

# Shapes as the template's catalog writes them (config.json fields of the checkpoints), with the
# parameter counts their Hub pages give.
QWEN2_5_0_5B = {
    "config": {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864,
               "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
               "vocab_size": 151936, "tie_word_embeddings": True},
    "params": 494_032_768,
}  # fmt: skip
LLAMA_3_2_1B = {
    "config": {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192,
               "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
               "head_dim": 64, "vocab_size": 128256, "tie_word_embeddings": True},
    "params": 1_235_814_400,
}  # fmt: skip
SMALL = {
    "config": {"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
               "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
               "vocab_size": 4096, "tie_word_embeddings": True},
}  # fmt: skip


@pytest.mark.parametrize(
    "shape", [QWEN2_5_0_5B, LLAMA_3_2_1B], ids=["qwen2.5-0.5b", "llama-3.2-1b"]
)
def test_a_shape_builds_the_checkpoints_parameter_count(shape):
    config = acceptance.model_config(shape)
    assert acceptance.parameter_count(config) == shape["params"]


def test_the_random_model_loads_with_the_projects_tokenizer(project_root, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = acceptance.build_random_model(tmp_path / "model", SMALL, load(project_root), "cpu")
    model = AutoModelForCausalLM.from_pretrained(out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert model.config.vocab_size == len(tokenizer) == 4096
    assert model.config.eos_token_id == tokenizer.eos_token_id
    assert tokenizer.decode([4095]) == acceptance.FILLER.format(4095)  # every id decodes
    messages = [{"role": "user", "content": "2+2?"}]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert "<|im_start|>user" in text  # the project's chat template (Qwen's ChatML)
    ids = tokenizer(text)["input_ids"]
    assert max(ids) < 1024 and tokenizer.decode(ids) == text  # real tokens unchanged


def test_a_shape_that_is_not_the_checkpoints_is_refused(project_root, tmp_path):
    wrong = {**QWEN2_5_0_5B, "params": QWEN2_5_0_5B["params"] + 1}
    with pytest.raises(UserError, match="the catalog says 494,032,769"):
        acceptance.build_random_model(tmp_path / "m", wrong, load(project_root), "meta")
    assert not (tmp_path / "m").exists()


def case(folder, name, report=None, exit_code=None, **extra):
    folder.mkdir(parents=True)
    (folder / "case.json").write_text(json.dumps({"name": name, "model": "org/m", **extra}))
    if report is not None:
        (folder / "gpu-check.json").write_text(json.dumps(report))
    if exit_code is not None:
        (folder / "exit_code").write_text(f"{exit_code}\n")
    return folder


REPORT = {"gpu": "NVIDIA H200", "tier": "24GB", "estimated_peak_gib": 18.5, "steps": 2,
          "card_used_gib": 19.2, "torch_peak_reserved_gib": 17.0, "trainer": "GRPOTrainer",
          "use_vllm": True, "load_in_4bit": False, "verdict": "pass"}  # fmt: skip


def test_the_table_has_one_row_per_case(tmp_path, capsys):
    folders = [
        case(tmp_path / "a", "24GB LoRA", REPORT, 0, plan="lora bf16, vLLM colocate"),
        case(tmp_path / "b", "24GB QLoRA", exit_code=124),
        case(tmp_path / "c", "80GB full FT", {**REPORT, "torch_peak_reserved_gib": 30.0,
                                              "load_in_4bit": True, "verdict": "fail"}, 2),
        case(tmp_path / "d", "16GB fp16"),
    ]  # fmt: skip
    rows = [acceptance.case_row(f) for f in folders]
    assert rows[0]["peak GiB"] == "19.2" and rows[0]["estimate GiB"] == "18.5"
    assert rows[0]["peak / estimate"] == "1.04" and rows[0]["verdict"] == "pass"
    assert rows[0]["ran"] == "GRPOTrainer, vLLM" and rows[0]["plan"] == "lora bf16, vLLM colocate"
    assert rows[1]["verdict"].startswith("timed out: see ") and rows[1]["peak GiB"] == ""
    assert rows[2]["peak GiB"] == "30.0" and rows[2]["ran"].endswith("4-bit")
    assert rows[3]["verdict"].startswith("not run")
    assert acceptance.main(["table", *map(str, folders)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("GPU acceptance, ") and "NVIDIA H200" in out[0]
    lines = [line for line in out if line.startswith("|")]
    assert len(lines) == 2 + len(folders)
    assert lines[0] == "| " + " | ".join(acceptance.COLUMNS) + " |"
    assert all(line.count("|") == len(acceptance.COLUMNS) + 1 for line in lines)
