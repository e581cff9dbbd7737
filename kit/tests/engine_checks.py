"""Checks of `grpo export`'s output with the engines' own code, run INSIDE an engine's environment
(`.venvs/verl`: verl 0.9.1 as pinned; `.venvs/openrlhf`: OpenRLHF 0.11.2 without flash-attn, vLLM
or DeepSpeed's CUDA ops) by tests/test_export_engines.py:

    python engine_checks.py verl|openrlhf cases.json    # prints one JSON object per case

Each case: an export folder, the tiny model (tokenizer and weights) it names, and completions.
The checks only report what the engine did (the test compares it with `grpo reward-debug`'s
scores): not a test module, so it imports nothing of the test suite.
"""

from __future__ import annotations

import asyncio
import importlib.machinery
import json
import os
import shlex
import sys
import types
from pathlib import Path


def launch_arguments(launch: Path, module: str) -> list[str]:
    """The arguments the launch file passes to `python3 -m <module>`, as bash splits them."""
    text = launch.read_text().replace("\\\n", " ")
    for line in text.splitlines():
        if f"python3 -m {module}" in line:
            words = shlex.split(line, comments=True)
            return words[words.index(module) + 1 :]
    raise SystemExit(f"{launch}: no `python3 -m {module}` line")


def stub(name: str, **attributes) -> None:
    """A module the engine imports for GPUs only (vLLM): present, empty."""
    module = types.ModuleType(name)
    module.__dict__.update(attributes)
    module.__path__ = []
    module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
    sys.modules[name] = module


# --- verl ----------------------------------------------------------------------------------------


def verl_case(case: dict) -> dict:
    import numpy as np
    import torch
    import verl
    from hydra import compose, initialize_config_dir
    from transformers import AutoTokenizer
    from verl import DataProto
    from verl.trainer.ppo.reward import get_custom_reward_fn, load_reward_manager
    from verl.trainer.ppo.utils import create_rl_dataset, need_critic, need_reference_policy
    from verl.utils.config import validate_config

    out = Path(case["out"])
    overrides = launch_arguments(out / "launch.sh", "verl.trainer.main_ppo")
    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        config = compose(config_name="ppo_trainer", overrides=overrides)
    # The one check left out: validate_config asks vLLM (absent without a GPU) for its largest
    # LoRA rank.
    lora_ranks = []
    stub("verl.workers.rollout.vllm_rollout")
    stub("verl.workers.rollout.vllm_rollout.utils", get_vllm_max_lora_rank=lora_ranks.append)
    validate_config(config, need_reference_policy(config), need_critic(config))

    tokenizer = AutoTokenizer.from_pretrained(case["model"])
    datasets = {}
    for name, path in (("train", config.data.train_files), ("test", config.data.val_files)):
        dataset = create_rl_dataset([path], config.data, tokenizer, None, is_train=name == "train")
        first = dataset[0]
        # verl 0.9 renders the chat prompt in its agent loop: the item keeps the messages.
        datasets[name] = {"rows": len(dataset), "raw_prompt": _plain_list(first.get("raw_prompt")),
                          "rendered": tokenizer.apply_chat_template(
                              _plain_list(first["raw_prompt"]), tokenize=False,
                              add_generation_prompt=True)}  # fmt: skip

    custom = get_custom_reward_fn(config)
    manager = load_reward_manager(config, tokenizer)
    import pandas as pd

    rows = pd.read_parquet(config.data.train_files).to_dict("records")
    scores = {}
    for kind, completions in case["completions"].items():
        got = []
        for row, completion in zip(rows, completions, strict=False):
            ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
            ids = [*ids, tokenizer.eos_token_id]  # the rollout stops on eos
            responses = torch.tensor([ids])
            data = DataProto.from_dict(
                tensors={"responses": responses, "attention_mask": torch.ones_like(responses)},
                non_tensors={
                    key: np.array([row[key]], dtype=object)
                    for key in ("data_source", "reward_model", "extra_info")
                },
            )
            result = manager.loop.run_until_complete(manager.run_single(data))
            extra = {k: _plain(v) for k, v in result["reward_extra_info"].items()}
            got.append({"score": float(result["reward_score"]), "tokens": len(ids), "extra": extra})
        scores[kind] = got
    return {
        "config": {
            "reward_path": config.reward.custom_reward_function.path,
            "reward_manager": config.reward.reward_manager.name,
            "test_freq": config.trainer.test_freq,
            "custom_reward_fn": custom is not None,
        },
        "lora_ranks_for_vllm": lora_ranks,
        "datasets": datasets,
        "scores": scores,
    }


def _plain_list(value):
    return json.loads(
        json.dumps(list(value), default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v))
    )


def _plain(value):
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


# --- OpenRLHF ------------------------------------------------------------------------------------


TOWERS = ("visual", "vision_tower", "vision_model", "audio_tower", "multi_modal_projector")


class Parsed(Exception):
    """Raised where train_ppo_ray's train() starts Ray: the arguments, parsed and checked."""

    def __init__(self, args):
        super().__init__("parsed")
        self.parsed = args


def openrlhf_arguments(out: Path):
    """train_ppo_ray's own argparse and checks over the launch file's flags, stopped where
    train() starts Ray (vLLM stubbed: absent without a GPU)."""
    import runpy

    import ray

    flags = launch_arguments(out / "launch.sh", "openrlhf.cli.train_ppo_ray")

    def started():
        raise Parsed(sys._getframe(1).f_locals["args"])

    ray.is_initialized = started
    sys.argv = ["train_ppo_ray", *flags]
    try:
        runpy.run_module("openrlhf.cli.train_ppo_ray", run_name="__main__")
    except Parsed as parsed:
        return parsed.parsed
    raise SystemExit("train_ppo_ray did not reach train()")


def openrlhf_stubs() -> None:
    """vLLM and flash-attn (CUDA builds) as empty modules: imported by OpenRLHF's modules,
    unused by what is checked here (argparse, datasets, the reward executor, LoRA on the CPU)."""
    stub("vllm", __version__="0.0.0", LLM=object, SamplingParams=object)
    stub("vllm.inputs", TokensPrompt=dict)
    stub("vllm.utils", random_uuid=lambda: "0")
    unused = dict.fromkeys(("index_first_axis", "pad_input", "rearrange", "unpad_input"), None)
    stub("flash_attn")
    stub("flash_attn.bert_padding", **unused)
    stub("flash_attn.utils")
    stub("flash_attn.utils.distributed", all_gather=None)


def openrlhf_case(case: dict) -> dict:
    openrlhf_stubs()
    from openrlhf.datasets import PromptDataset
    from openrlhf.datasets.utils import blending_datasets
    from openrlhf.models import Actor
    from openrlhf.utils.agent import SingleTurnAgentExecutor
    from peft.tuners.lora import LoraLayer
    from transformers import AutoTokenizer

    out = Path(case["out"])
    args = openrlhf_arguments(out)
    strategy = types.SimpleNamespace(args=args, is_rank_0=lambda: True, print=print)
    tokenizer = AutoTokenizer.from_pretrained(args.actor.model_name_or_path)
    datasets = {}
    for name, path in (("train", args.data.prompt_dataset), ("test", args.eval.dataset)):
        # prepare_datasets: both files cut to --data.max_samples.
        data = blending_datasets(path, None, strategy, dataset_split="train")
        data = data.select(range(min(args.data.max_samples, len(data))))
        dataset = PromptDataset(data, tokenizer, strategy, input_template=args.data.input_template)
        datasets[name] = {"rows": len(dataset)}
        if name == "train":
            prompts = [dataset[i][1] for i in range(len(dataset))]
            labels = [dataset[i][2] for i in range(len(dataset))]

    executor = SingleTurnAgentExecutor(remote_rm_url=args.reward.remote_url)
    scores = {}
    for kind, completions in case["completions"].items():
        got = []
        for prompt, label, completion in zip(prompts, labels, completions, strict=False):
            # SingleTurnAgentExecutor.execute: prompt ids + generated ids (ending in eos),
            # decoded together with special tokens.
            ids = tokenizer(text=prompt, add_special_tokens=False)["input_ids"]
            ids += tokenizer(completion, add_special_tokens=False)["input_ids"]
            query = tokenizer.decode([*ids, tokenizer.eos_token_id], skip_special_tokens=False)
            info = asyncio.run(executor._fetch_rewards_via_func([query], [prompt], [label]))[0]
            got.append({"score": float(info["rewards"][0]), "correct": float(info["scores"][0])})
        scores[kind] = got

    actor = Actor(
        args.actor.model_name_or_path,
        attn_implementation="eager",
        param_dtype="bf16",  # its default; fp32 is not among its choices
        lora_rank=args.ds.lora.rank,
        lora_alpha=args.ds.lora.alpha,
        lora_dropout=args.ds.lora.dropout,
        target_modules=args.ds.lora.target_modules,
    )
    lora = [n for n, m in actor.model.named_modules() if isinstance(m, LoraLayer)]
    adapted = sorted({n.rsplit(".", 1)[-1] for n in lora})
    towers = [n for n in lora if any(part in TOWERS for part in n.split("."))]
    return {
        "args": {
            "target_modules": list(args.ds.lora.target_modules),
            "eval_steps": args.eval.steps,
            "max_samples": args.data.max_samples,
            "num_episodes": args.train.num_episodes,
            "remote_url": list(args.reward.remote_url),
        },
        "lora_adapted": adapted,
        "lora_in_towers": towers,
        "datasets": datasets,
        "scores": scores,
    }


CASES = {"verl": verl_case, "openrlhf": openrlhf_case}


def main() -> None:
    engine, cases = sys.argv[1], json.loads(Path(sys.argv[2]).read_text())
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    results = {}
    for case in cases:
        os.chdir(case["cwd"])  # the engine's working folder, not the project's
        results[case["name"]] = CASES[engine](case)
    print("RESULTS " + json.dumps(results))


if __name__ == "__main__":
    main()
