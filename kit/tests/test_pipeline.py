"""The whole pipeline on the tiny model, through the kit's own flow (what every project runs
until it ejects a script): train -> merge (with its check) -> infer, offline; and the ejectable
starter scripts, which must do what the kit does."""

import pytest
from conftest import smoke_train
from grpo_kit import answering as infer
from grpo_kit import merging as merge
from grpo_kit import training
from grpo_kit.commands import smoke
from grpo_kit.errors import UserError
from grpo_kit.merging import MergeCheckFailed
from grpo_kit.starters.scripts import infer as infer_script
from grpo_kit.starters.scripts import merge as merge_script


@pytest.fixture(scope="module")
def trained_run(tiny_model_dir, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    smoke_train(tiny_model_dir, run_dir)
    return run_dir


def test_train_saves_a_model(trained_run):
    saved = {p.name for p in trained_run.iterdir()}
    assert "adapter_model.safetensors" in saved or "model.safetensors" in saved
    assert "tokenizer_config.json" in saved


def test_merge_writes_a_verified_standalone_model(trained_run, tmp_path, capsys):
    out = merge.merge([str(trained_run), "--output", str(tmp_path / "merged")])
    assert (out / "config.json").is_file() and (out / "tokenizer_config.json").is_file()
    assert not (out / "adapter_config.json").exists()
    assert "merge check passed" in capsys.readouterr().out


def test_merge_refuses_to_overwrite(trained_run, tmp_path):
    (tmp_path / "merged").mkdir()
    with pytest.raises(UserError, match="already exists"):
        merge.merge([str(trained_run), "--output", str(tmp_path / "merged")])


def test_merge_check_catches_a_merge_that_lost_the_adapter(
    tiny_model_dir, tmp_path, monkeypatch, recipe
):
    import torch
    from grpo_kit.generation import model_class
    from peft import LoraConfig, get_peft_model
    from transformers import AutoTokenizer

    # An adapter with large random weights, so it clearly changes the outputs, on the recipe's
    # targets, or on a full fine-tuning tier the attention projections (PEFT refuses
    # `all-linear` on a Mamba model such as Nemotron-H).
    base = model_class(str(tiny_model_dir)).from_pretrained(tiny_model_dir)
    targets = recipe.model.lora_target_modules or ["q_proj", "v_proj", "qkv_proj"]
    config = LoraConfig(r=4, target_modules=targets, init_lora_weights=False)
    model = get_peft_model(base, config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_" in name:
                param.normal_(0, 1.0)
    adapter_dir = tmp_path / "adapter"
    model.save_pretrained(adapter_dir)
    AutoTokenizer.from_pretrained(tiny_model_dir).save_pretrained(adapter_dir)

    # Simulate the known bug: "merging" returns the base model without the adapter.
    from peft import PeftModel

    monkeypatch.setattr(
        PeftModel, "merge_and_unload", lambda self, *a, **k: self.unload(), raising=False
    )
    with pytest.raises(MergeCheckFailed, match="behaves like the base model"):
        merge.merge(
            [str(adapter_dir), "--output", str(tmp_path / "merged"), "--max-new-tokens", "4"]
        )
    assert not (tmp_path / "merged").exists()
    assert not (tmp_path / "merged.partial").exists()


def test_infer_generates_text(trained_run, tmp_path):
    """With the default decoding (the model card's sampling, else greedy); a seed repeats it."""
    out = merge.merge([str(trained_run), "--output", str(tmp_path / "merged")])
    ask = ["--model", str(out), "--prompt", "What is 2 + 3?", "--max-new-tokens", "8"]
    answers = infer.infer([*ask, "--seed", "0"])
    # An agent task's answer is its rollout (messages), shown as a transcript.
    shown = [a for a in answers]
    assert len(answers) == 1 and shown[0].strip()
    assert infer.infer([*ask, "--seed", "0"]) == answers


def test_the_ejectable_scripts_do_what_the_kit_does(trained_run, tmp_path, capsys):
    """`grpo eject merge|infer` gives a project the kit's own steps to edit: as ejected, they
    write the same checked model and give the same answers."""
    ours = merge.merge([str(trained_run), "--output", str(tmp_path / "kit")])
    theirs = merge_script.merge([str(trained_run), "--output", str(tmp_path / "script")])
    assert capsys.readouterr().out.count("merge check passed") == 2
    ask = ["--prompt", "What is 2 + 3?", "--max-new-tokens", "8", "--seed", "0"]
    answers = infer.infer(["--model", str(ours), *ask])
    assert infer_script.infer(["--model", str(theirs), *ask]) == answers


def test_infer_from_adapter_and_prompts_file(trained_run, tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"prompt": "one"}\n{"prompt": "two"}\n"three"\n', encoding="utf-8")
    output = tmp_path / "answers.jsonl"
    answers = infer.infer(
        [
            "--model",
            str(trained_run),
            "--prompts-file",
            str(prompts),
            "--output",
            str(output),
            "--max-new-tokens",
            "4",
            "--batch-size",
            "2",
            "--greedy",
        ]
    )
    assert len(answers) == 3
    assert len(output.read_text(encoding="utf-8").splitlines()) == 3


def test_resume_continues_from_the_last_checkpoint(tiny_model_dir, tmp_path):
    run_dir = tmp_path / "run"
    smoke_train(tiny_model_dir, run_dir, "--save_strategy", "steps", "--save_steps", "1")
    assert (run_dir / "checkpoint-2").is_dir()
    trainer = smoke_train(
        tiny_model_dir, run_dir, "--save_strategy", "steps", "--save_steps", "1", "--max_steps", "3"
    )
    assert trainer.state.global_step == 3
    assert (run_dir / "checkpoint-3").is_dir()


def test_cli_reports_a_bad_recipe_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("max_prompt_length: 512\n", encoding="utf-8")
    assert training.command(["--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("error: recipe:")
    assert "Traceback" not in err


def test_smoke_pipeline_trains_merges_and_answers(tiny_model_dir, tmp_path, capsys):
    output = tmp_path / "smoke"  # never the user's outputs/smoke
    answers = smoke.pipeline(
        ["--model_name_or_path", str(tiny_model_dir), "--output_dir", str(output)]
    )
    assert len(answers) == 1 and answers[0].strip()
    assert (output / "merged" / "config.json").is_file()
    assert "merge check passed" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.distributed
def test_two_process_distributed_training_on_cpu(tiny_model_dir, tmp_path):
    """The distributed path (torchrun, gloo) with 2 processes on the tiny model."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
        "-m", "grpo_kit", "train", "--config", "configs/grpo.yaml", "--smoke",
        "--model_name_or_path", str(tiny_model_dir), "--output_dir", str(tmp_path / "ddp"),
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "training processes: 2" in result.stderr
    saved = {p.name for p in (tmp_path / "ddp").iterdir()}
    assert "adapter_model.safetensors" in saved or "model.safetensors" in saved


def test_a_distributed_process_exits_without_the_interpreters_teardown(tmp_path, monkeypatch):
    """A rank of a distributed run ends with os._exit once its work is flushed: the teardown that
    frees the DDP reducer could deadlock with a gloo worker thread (issue: the 2-process run hung
    at exit). A single process returns normally."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("max_prompt_length: 512\n", encoding="utf-8")
    exits = []
    monkeypatch.setattr(training.os, "_exit", exits.append)
    monkeypatch.setenv("WORLD_SIZE", "2")
    training.main(None, ["--config", str(bad)])
    assert exits == [2]
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert training.main(None, ["--config", str(bad)]) == 2
    assert exits == [2]


def test_the_tools_template_error_names_the_installed_trl(monkeypatch):
    """The refusal of a template TRL cannot train tool calls with names the TRL installed, not
    the one the kit was written against (review §5c: "TRL 1.16" was written in)."""
    import importlib.metadata

    import trl.chat_template_utils

    monkeypatch.setattr(trl.chat_template_utils, "supports_tool_calling", lambda tok: False)
    real = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata, "version", lambda name: "9.8.7" if name == "trl" else real(name)
    )
    with pytest.raises(UserError) as refused:
        training.check_tool_template(object(), "some/model")
    assert "a model whose template TRL 9.8 trains tool calls with" in str(refused.value)


def test_merge_loads_the_adapter_in_the_dtype_training_ran_in(trained_run, recipe):
    """A fresh Unsloth project's smoke failed its merge check: the run trained in float32 on the
    CPU, and the merge's dtype `auto` let Unsloth load bfloat16 (a CPU with avx512_bf16), whose
    greedy outputs differ on a random model's near-tied logits. The merge now loads in the
    recipe's dtype unless --dtype says otherwise."""
    smoke_args = merge.parse_args([str(trained_run), "--smoke"])
    assert smoke_args.dtype == "float32"  # the smoke recipe's, the dtype the run trained in
    args = merge.parse_args([str(trained_run)])
    assert args.dtype == (args.recipe.model.dtype or "auto")
    chosen = merge.parse_args([str(trained_run), "--smoke", "--dtype", "auto"])
    assert chosen.dtype == "auto"
