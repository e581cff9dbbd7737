"""`grpo acceptance`: the parts of the GPU acceptance run (the template's
scripts/gpu_acceptance.sh) that run inside a generated project.

    grpo acceptance model SHAPE.json OUT_DIR [--device cuda]   # random weights, exact shape
    grpo acceptance table CASE_DIR...                           # peak vs estimate, one row each

`model` writes a model of the exact shape a catalog entry describes, with random weights and this
project's tokenizer and chat template (the offline tiny model's, widened to the model's
vocabulary). SHAPE.json holds `config` (transformers config fields, `model_type` included) and
`params` (the catalog's parameter count, checked against the built model). Memory depends on the
shapes, not on the weights, so `grpo gpu-check --local-model OUT_DIR` measures what the real
checkpoint would, with no download.

`table` reads the case folders the script fills (case.json: the case; gpu-check.json: gpu-check's
report, when it got that far; exit_code; log.txt) and prints one Markdown table of peak vs
estimate, headed by the date and the machine, ready for the README.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ..errors import UserError
from ..runner import run
from .gpu_check import measured_gib

FILLER = "<|acceptance_{}|>"  # tokens that pad the tokenizer to the model's vocabulary


def model_config(shape: dict):
    """The transformers config of a shape (`config`: fields with `model_type`)."""
    from transformers import AutoConfig

    fields = dict(shape["config"])
    model_type = fields.pop("model_type", None)
    if not model_type:
        raise UserError("the shape's config names no model_type")
    return AutoConfig.for_model(model_type, **fields)


def parameter_count(config) -> int:
    """The parameters of the model a config builds (on the meta device: no memory, any size),
    shared ones (tied embeddings) counted once, as the catalog counts them."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


def widen_tokenizer(tokenizer, vocab_size: int):
    """`tokenizer` with filler entries up to `vocab_size`, so that every id the model can sample
    decodes (as its filler text); the real tokens and the chat template are unchanged."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    data = json.loads(tokenizer.backend_tokenizer.to_str())
    vocab = data["model"]["vocab"]
    used = {*vocab.values(), *(token["id"] for token in data.get("added_tokens", []))}
    if len(used) > vocab_size:
        raise UserError(f"the tokenizer has {len(used)} tokens, more than the shape's {vocab_size}")
    for index in range(vocab_size):
        if index not in used:
            vocab[FILLER.format(index)] = index
    wide = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(json.dumps(data)),
        eos_token=tokenizer.eos_token,
        pad_token=tokenizer.pad_token,
        bos_token=tokenizer.bos_token,
        padding_side=tokenizer.padding_side,
    )
    wide.chat_template = tokenizer.chat_template
    return wide


def build_random_model(
    out_dir: Path, shape: dict, project, device: str = "cuda", dtype: str = "bfloat16"
) -> Path:
    """Write a random-weight model of `shape` with this project's tokenizer to `out_dir`; its
    parameter count must be the shape's `params` (when given)."""
    import torch
    from transformers import AutoModelForCausalLM

    from ..offline.tiny_model import build_tokenizer

    config = model_config(shape)
    expected = shape.get("params")
    if expected is not None:
        built = parameter_count(config)
        if built != expected:
            raise UserError(
                f"the shape builds {built:,} parameters, the catalog says {expected:,}: the "
                "shape's config is not the checkpoint's"
            )
    sample = project.root / project.task.data.sample
    tokenizer = widen_tokenizer(build_tokenizer(sample, project.chat_template), config.vocab_size)
    text = config.get_text_config()
    text.eos_token_id = tokenizer.eos_token_id
    text.pad_token_id = (
        tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    )
    text.bos_token_id = tokenizer.bos_token_id
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = text.pad_token_id
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


# --- the table --------------------------------------------------------------------------------

COLUMNS = ("case", "model", "plan", "ran", "steps", "peak GiB", "estimate GiB",
           "peak / estimate", "verdict")  # fmt: skip


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def case_row(folder: Path) -> dict:
    """One case's row from its folder: its report's figures, or why there are none."""
    folder = Path(folder)
    case = _read_json(folder / "case.json") or {"name": folder.name}
    report = _read_json(folder / "gpu-check.json")
    exit_text = (
        (folder / "exit_code").read_text().strip() if (folder / "exit_code").is_file() else ""
    )
    row = {
        "case": case.get("name", folder.name),
        "model": case.get("model", ""),
        "plan": case.get("plan", ""),
        "ran": "",
        "steps": "",
        "peak GiB": "",
        "estimate GiB": "",
        "peak / estimate": "",
        "verdict": "",
    }
    if report is None:
        why = {"": "not run", "124": "timed out", "137": "killed (timeout or memory)"}.get(
            exit_text, f"failed (exit {exit_text})"
        )
        row["verdict"] = f"{why}: see {folder / 'log.txt'}"
        return row
    measured = measured_gib(report)
    estimate = float(report["estimated_peak_gib"])
    ran = [str(report.get("trainer", "")), "vLLM" if report.get("use_vllm") else "no vLLM"]
    if report.get("load_in_4bit"):
        ran.append("4-bit")
    row.update(
        {
            "ran": ", ".join(ran),
            "steps": str(report.get("steps", "")),
            "peak GiB": f"{measured:.1f}",
            "estimate GiB": f"{estimate:.1f}",
            "peak / estimate": f"{measured / estimate:.2f}" if estimate > 0 else "",
            "verdict": str(report.get("verdict", "")),
        }
    )
    return row


def table(rows: Sequence[dict]) -> str:
    """The rows as one Markdown table (COLUMNS)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        cells = (str(row.get(column, "")).replace("|", "/") for column in COLUMNS)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def heading(folders: Sequence[Path]) -> str:
    """The date and the machine: the GPU the reports name and the installed library versions."""
    from importlib import metadata

    reports = [_read_json(Path(folder) / "gpu-check.json") for folder in folders]
    gpus = sorted({report.get("gpu", "") for report in reports if report})
    versions = []
    for name in ("torch", "vllm", "trl", "transformers"):
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    machine = ", ".join(gpus) or "no report named its GPU"
    return f"GPU acceptance, {time.strftime('%Y-%m-%d')}: {machine}; {', '.join(versions)}"


# --- the command --------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None):
    parser = argparse.ArgumentParser(prog="grpo acceptance", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="action", required=True)
    model = commands.add_parser("model", help="a random-weight model of a shape, for this project")
    model.add_argument("shape", type=Path, help="SHAPE.json: config (with model_type), params")
    model.add_argument("out_dir", type=Path)
    model.add_argument("--device", default="cuda", help="where to initialise it (default cuda)")
    model.add_argument("--dtype", default="bfloat16")
    rows = commands.add_parser("table", help="peak vs estimate of the case folders")
    rows.add_argument("folders", type=Path, nargs="+")
    return parser.parse_args(argv)


def acceptance(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.action == "table":
        print(heading(args.folders))
        print()
        print(table([case_row(folder) for folder in args.folders]))
        return
    from ..project import load as load_project

    shape = _read_json(args.shape)
    if shape is None or "config" not in shape:
        raise UserError(f"{args.shape}: not a shape file (JSON with `config` and `params`)")
    out = build_random_model(args.out_dir, shape, load_project(), args.device, args.dtype)
    print(f"acceptance: a random-weight model of the shape in {out}")


def main(argv: Sequence[str] | None = None) -> int:
    return run(acceptance, argv)


if __name__ == "__main__":
    sys.exit(main())
