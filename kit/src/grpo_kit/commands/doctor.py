"""`grpo doctor` (`make doctor`): environment checks before a (long, paid) training run.

Checks the machine against the recipe and the tier the project was generated for (GPU count,
memory, bf16), the NVIDIA driver against what the installed torch and vLLM builds need and each
GPU's compute capability against torch's build (both read with nvidia-smi as well, so an old
driver is named even when torch sees no GPU), the installed library versions against the
project's pins, every installed package of the GPU extras (vLLM, bitsandbytes, DeepSpeed,
vllm-bnb-plugin) against its pin, against the range the installed TRL and Unsloth accept (their
own version checks and requirements) and against its own requirements, optional packages the
recipe needs, the fast kernels of a hybrid model (the project's `[kernels]` extra: installed, or
the PyTorch fallback), sampling that biases vLLM's importance-sampling correction, the dataset
(reachable, columns valid), the Hub token for gated models, and the prompt-length distribution
in tokens with the `max_prompt_tokens` it recommends. Each finding
says what to do. Exit code: 0 when nothing blocks the run (warnings
allowed), 1 when something does. Takes the same recipe arguments as `train` (`--smoke` checks
the offline smoke setup); `--offline` skips everything that needs the network.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import inspect
import math
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from ..errors import UserError
from ..runner import run

OK, INFO, WARN, FAIL = "ok", "info", "warn", "FAIL"


@dataclass(frozen=True)
class Check:
    level: str
    check: str
    message: str
    fix: str = ""


def _gib(n: float) -> str:
    return f"{n / 1024**3:.1f} GiB"


def check_python() -> list[Check]:
    """Reported for the record: the package itself requires Python 3.11 to install."""
    return [Check(OK, "python", "Python " + ".".join(map(str, sys.version_info[:3])))]


def check_hardware(
    recipe, cuda: bool, cpu_requested: bool, nvidia: NvidiaMachine | None = None
) -> list[Check]:
    """GPU presence, count, memory and bf16 against the tier and the recipe; `nvidia`: what
    nvidia-smi sees (GPUs torch cannot use are named as such)."""
    import torch

    training, tier = recipe.training, recipe.project.tier
    build = f"torch {torch.__version__}, CUDA build {torch.version.cuda}"
    findings = [Check(INFO, "torch", build)]
    needs_gpu = tier.is_gpu and not cpu_requested
    if not cuda:
        if needs_gpu and nvidia is not None and nvidia.gpus:
            findings.append(
                Check(
                    FAIL,
                    "gpu",
                    f"torch cannot use the {len(nvidia.gpus)} NVIDIA GPU(s) nvidia-smi shows "
                    f"({nvidia.names()}); this project was tuned for the {tier.name} tier",
                    "see the driver and torch build lines",
                )
            )
        elif needs_gpu:
            findings.append(
                Check(
                    FAIL,
                    "gpu",
                    f"no CUDA GPU found; this project was tuned for the {tier.name} tier "
                    f"({tier.gpus_per_node} x {tier.memory_gib:g} GiB GPU)",
                    "run on a machine with the GPU, or use --smoke for an offline CPU check, or "
                    "regenerate the project with gpu_tier=cpu",
                )
            )
        else:
            findings.append(Check(OK, "gpu", "no GPU, and the recipe trains on the CPU"))
        return findings
    count = torch.cuda.device_count()
    names = {torch.cuda.get_device_name(i) for i in range(count)}
    memory = min(torch.cuda.get_device_properties(i).total_memory for i in range(count))
    findings.append(Check(INFO, "gpu", f"{count} x {', '.join(sorted(names))} ({_gib(memory)})"))
    expected = tier.gpus_per_node
    if count < expected:
        findings.append(
            Check(
                FAIL,
                "gpu count",
                f"{count} GPU(s) visible, the {tier.name} tier expects {expected} per node",
                "check CUDA_VISIBLE_DEVICES, or regenerate with the tier that matches",
            )
        )
    budget = tier.memory_gib * 1024**3
    if memory < budget * 0.97:
        findings.append(
            Check(
                FAIL if memory < tier.estimated_peak_gib * 1024**3 else WARN,
                "gpu memory",
                f"{_gib(memory)} per GPU; the recipe was tuned for {tier.memory_gib:g} GiB "
                f"(estimated peak {tier.estimated_peak_gib:.1f} GiB)",
                "regenerate for a smaller tier, or lower per_device_train_batch_size, "
                "num_generations or max_completion_length",
            )
        )
    elif memory > budget * 1.5:
        findings.append(
            Check(
                WARN,
                "gpu memory",
                f"{_gib(memory)} per GPU, more than the {tier.name} tier assumes",
                "regenerate for the bigger tier to use it (larger batches, longer completions)",
            )
        )
    if training.bf16 and not torch.cuda.is_bf16_supported():
        findings.append(
            Check(
                FAIL,
                "bf16",
                "the recipe uses bf16 but this GPU does not support it",
                "set bf16: false, fp16: true and dtype: float16 (or regenerate with gpu_tier=16GB)",
            )
        )
    return findings


# --- the NVIDIA driver and the GPUs' compute capability, against the installed builds -----------

# The oldest Linux driver each CUDA major version runs on (minor version compatibility): NVIDIA,
# https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html, table 1.
MIN_DRIVER = {13: 580, 12: 525, 11: 450}
TORCH_INDEX_ROOT = "https://download.pytorch.org/whl"
# vLLM's prebuilt wheels need compute capability 7.5 or newer (docs.vllm.ai, Installation, GPU).
VLLM_MIN_CAPABILITY = (7, 5)
# Examples of GPUs by compute capability, for the messages (NVIDIA's CUDA GPUs list).
GPU_EXAMPLES = {
    (7, 0): "V100",
    (7, 5): "T4, RTX 20xx",
    (8, 0): "A100, A30",
    (8, 6): "A10, A10G, A40, RTX A6000, RTX 30xx",
    (8, 9): "L4, L40S, RTX 40xx",
    (9, 0): "H100, H200",
    (10, 0): "B200, GB200",
    (12, 0): "RTX 50xx, RTX PRO 6000",
}


@dataclass(frozen=True)
class NvidiaGpu:
    name: str
    capability: tuple[int, int] | None  # None: this nvidia-smi cannot say


@dataclass(frozen=True)
class NvidiaMachine:
    """The driver and GPUs as the driver reports them: known even when torch cannot use them."""

    driver: str | None  # e.g. "535.104.05"
    gpus: tuple[NvidiaGpu, ...] = ()

    def names(self) -> str:
        return ", ".join(sorted({gpu.name for gpu in self.gpus}))


def _nvidia_smi(fields: str) -> list[list[str]] | None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        done = subprocess.run(
            [smi, f"--query-gpu={fields}", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return [[part.strip() for part in line.split(",")] for line in done.stdout.splitlines() if line]


def _capability(text: str) -> tuple[int, int] | None:
    match = re.fullmatch(r"(\d+)\.(\d+)", text.strip())
    return (int(match[1]), int(match[2])) if match else None


def probe_nvidia() -> NvidiaMachine | None:
    """The NVIDIA driver's version and GPUs, from nvidia-smi (whose compute_cap field needs a
    recent driver), else the kernel module's /proc/driver/nvidia/version; None without one."""
    rows = _nvidia_smi("name,driver_version,compute_cap")
    if rows is None:
        rows = [[*row, ""] for row in _nvidia_smi("name,driver_version") or []] or None
    if rows:
        gpus = tuple(NvidiaGpu(row[0], _capability(row[2])) for row in rows if len(row) >= 3)
        return NvidiaMachine(rows[0][1] or None, gpus)
    version = Path("/proc/driver/nvidia/version")
    try:
        match = re.search(r"Kernel Module(?: for \w+)?\s+(\d+\.\d+(?:\.\d+)?)", version.read_text())
    except OSError:
        return None
    return NvidiaMachine(match[1] if match else None)


def _major(version: str) -> int:
    return int(version.split(".", 1)[0])


def _cuda_of_local_version(version: str) -> str | None:
    """The CUDA version a wheel's local version names: "13.0" for "0.30.0+cu130"."""
    match = re.search(r"\+cu(\d+)(\d)$", version)
    return f"{match[1]}.{match[2]}" if match else None


def vllm_cuda(torch_version: str, torch_cuda: str | None) -> str | None:
    """The CUDA version the installed vLLM was built for: its wheel's +cuXYZ tag, else PyPI's
    build, which is built against PyPI's torch (so torch's, when torch is PyPI's build too);
    None when vLLM is missing or this cannot be told."""
    try:
        version = metadata.version("vllm")
    except metadata.PackageNotFoundError:
        return None
    tagged = _cuda_of_local_version(version)
    if tagged:
        return tagged
    return torch_cuda if "+" not in torch_version else None


def _code_capabilities(arch_list: list[str]) -> list[int]:
    """sm_75 / compute_90 / sm_100a -> 75, 90, 100 (what torch's own check reads)."""
    found = []
    for arch in arch_list:
        match = re.fullmatch(r"(?:sm|compute)_(\d+)[af]?", arch)
        if match:
            found.append(int(match[1]))
    return found


def runs_on(capability: tuple[int, int], code: int) -> bool:
    """Whether code built for `code` (75 for sm_75) runs on a device of `capability`: torch's
    own rule (torch.cuda.DEVICE_REQUIREMENT), else NVIDIA's: the same major version, no
    older minor."""
    import torch

    device = 10 * capability[0] + capability[1]
    requirement = getattr(torch.cuda, "DEVICE_REQUIREMENT", {}).get(code)
    if requirement is not None:
        return device in requirement
    return device // 10 == code // 10 and device % 10 >= code % 10


def torch_builds_for(capability: tuple[int, int] | None, max_cuda_major: int) -> list[str]:
    """The CUDA versions of this torch release's published builds (torch's own table,
    torch.cuda.PYTORCH_RELEASES_CODE_CC) that run on this GPU and this driver, newest first."""
    import torch

    table = getattr(torch.cuda, "PYTORCH_RELEASES_CODE_CC", {})
    arch = "aarch64" if platform.machine().lower() == "aarch64" else "x86_64"
    builds = []
    for cuda, by_arch in table.items():
        if _major(cuda) > max_cuda_major:
            continue
        codes = by_arch.get(arch, set())
        if capability is None or any(runs_on(capability, code) for code in codes):
            builds.append(cuda)
    return sorted(builds, key=lambda v: tuple(map(int, v.split("."))), reverse=True)


def torch_index(cuda: str) -> str:
    return f"{TORCH_INDEX_ROOT}/cu{cuda.replace('.', '')}"


def _examples_from(capability: tuple[int, int]) -> str:
    return "; ".join(text for cc, text in GPU_EXAMPLES.items() if cc >= capability)


def _driver_major_for(driver: str | None) -> int:
    """The newest CUDA major version this driver runs (0 when unknown)."""
    if not driver:
        return 0
    majors = [cuda for cuda, oldest in MIN_DRIVER.items() if _major(driver) >= oldest]
    return max(majors, default=0)


def check_cuda_stack(
    recipe, cuda: bool, cpu_requested: bool, nvidia: NvidiaMachine | None
) -> list[Check]:
    """The NVIDIA driver against the CUDA builds of torch and vLLM, and every GPU's compute
    capability against torch's build (and vLLM's minimum when the recipe generates with vLLM).
    One line each, with the fix: the driver to install, or the torch index of a build that runs
    here (`make install TORCH_INDEX=<url>`)."""
    import torch

    tier = recipe.project.tier
    blocking = FAIL if tier.is_gpu and not cpu_requested else WARN
    if nvidia is None and not cuda:
        return []  # no NVIDIA driver: check_hardware says what is missing
    nvidia = nvidia or NvidiaMachine(None)  # torch runs, nvidia-smi is not on the PATH
    gpus = list(nvidia.gpus)
    if cuda:  # torch's view of the devices (the same GPUs, with their capability)
        gpus = [
            NvidiaGpu(torch.cuda.get_device_name(i), tuple(torch.cuda.get_device_capability(i)))
            for i in range(torch.cuda.device_count())
        ]
    capabilities = sorted({gpu.capability for gpu in gpus if gpu.capability})
    build = torch.version.cuda
    driver_major = _driver_major_for(nvidia.driver)
    if build is None:
        if not gpus:
            return []
        return [
            Check(
                blocking,
                "torch build",
                f"torch {torch.__version__} is the CPU build; this machine has "
                f"{len(gpus)} NVIDIA GPU(s) ({nvidia.names()})",
                f"make install TORCH_INDEX=pypi (PyPI's CUDA build: driver >= "
                f"{MIN_DRIVER[max(MIN_DRIVER)]}), or TORCH_INDEX=<a CUDA 12 index> for an "
                "older driver",
            )
        ]
    findings = []
    needs = {f"torch {torch.__version__}": build}
    vllm_build = vllm_cuda(torch.__version__, build)
    if vllm_build:
        needs[f"vLLM {metadata.version('vllm')}"] = vllm_build
    required = max(MIN_DRIVER.get(_major(v), 0) for v in needs.values())
    what = " and ".join(f"{name} (CUDA {v} build)" for name, v in needs.items())
    if nvidia.driver is None:
        if not cuda:
            findings.append(Check(WARN, "driver", "the NVIDIA driver's version cannot be read"))
    elif _major(nvidia.driver) < required:
        capability = capabilities[0] if capabilities else None
        builds = torch_builds_for(capability, driver_major)
        fix = f"install NVIDIA driver {required} or newer"
        if builds:
            fix += (
                f", or torch's CUDA {builds[0]} build: make install "
                f"TORCH_INDEX={torch_index(builds[0])}"
            )
            if vllm_build:
                fix += f" (and vLLM's +cu{builds[0].replace('.', '')} wheel, docs.vllm.ai)"
        findings.append(
            Check(
                blocking,
                "driver",
                f"NVIDIA driver {nvidia.driver} is too old for {what}: it needs >= {required}",
                fix,
            )
        )
    else:
        findings.append(
            Check(OK, "driver", f"NVIDIA driver {nvidia.driver} runs {what} (>= {required})")
        )
    arch_list = list(torch.cuda.get_arch_list())
    codes = _code_capabilities(arch_list)
    vllm = uses_vllm(recipe)
    for capability in capabilities:
        names = ", ".join(sorted({g.name for g in gpus if g.capability == capability}))
        sm = f"sm_{capability[0]}{capability[1]}"
        if codes and not any(runs_on(capability, code) for code in codes):
            builds = torch_builds_for(capability, max(driver_major, _major(build)))
            oldest = min(codes)
            supported = (oldest // 10, oldest % 10)
            fix = (
                f"use a GPU of compute capability >= {supported[0]}.{supported[1]} "
                f"({_examples_from(supported)})"
            )
            if builds:
                fix = (
                    f"install torch's CUDA {builds[0]} build, which has {sm}: make install "
                    f"TORCH_INDEX={torch_index(builds[0])} (driver >= "
                    f"{MIN_DRIVER[_major(builds[0])]}); or {fix}"
                )
            findings.append(
                Check(
                    blocking,
                    "compute capability",
                    f"{names} ({sm}) is not in torch {torch.__version__}'s CUDA {build} build "
                    f"({' '.join(arch_list)})",
                    fix,
                )
            )
        else:
            findings.append(Check(OK, "compute capability", f"{names}: {sm}, in torch's build"))
        if vllm and capability < VLLM_MIN_CAPABILITY:
            findings.append(
                Check(
                    blocking,
                    "vllm",
                    f"vLLM needs compute capability >= {VLLM_MIN_CAPABILITY[0]}."
                    f"{VLLM_MIN_CAPABILITY[1]}; {names} is {capability[0]}.{capability[1]}",
                    "set use_vllm: false (fast_inference: false on Unsloth): slower generation",
                )
            )
    return findings


def _requirements(root: Path) -> list[str]:
    """The project's pinned requirements, from its pyproject.toml."""
    import tomllib

    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return []
    table = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    return list(table.get("dependencies", []))


def check_versions(root: Path) -> list[Check]:
    from packaging.requirements import Requirement

    findings = []
    for text in _requirements(root):
        requirement = Requirement(text)
        if requirement.marker is not None and "extra" in str(requirement.marker):
            continue
        try:
            installed = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            findings.append(
                Check(FAIL, "versions", f"{requirement.name} is not installed", "make install")
            )
            continue
        if requirement.specifier and not requirement.specifier.contains(
            installed, prereleases=True
        ):
            findings.append(
                Check(
                    FAIL,
                    "versions",
                    f"{requirement.name} {installed} is outside the tested range "
                    f"{requirement.specifier}",
                    f'pip install "{requirement}"',
                )
            )
    if not findings:
        findings.append(Check(OK, "versions", "installed libraries match the project's pins"))
    return findings


# --- the GPU extras against their pins and the ranges TRL / Unsloth accept ----------------------

GPU_EXTRA = "gpu"  # [project.optional-dependencies] gpu: the pins the template proved together
# The packages of the GPU extras, and vllm-bnb-plugin (vLLM's bitsandbytes support since 0.28).
EXTRA_PACKAGES = ("vllm", "vllm-bnb-plugin", "bitsandbytes", "deepspeed")
# The libraries whose requirements bound the extras (TRL's feature extras, e.g. trl[vllm], and
# its base requirements; Unsloth's base requirements).
GATEKEEPERS = ("trl", "unsloth", "unsloth-zoo")
# A requirement of an extra on one of these, unmet, breaks training (compiled kernels against
# another torch, a transformers API vLLM does not know); others are reported as warnings.
STACK = {"torch", "transformers", "trl", "peft", "accelerate", "datasets", "triton",
         "bitsandbytes", "vllm", "deepspeed"}  # fmt: skip
VLLM_BNB_PLUGIN_SINCE = "0.28"  # vLLM's bitsandbytes loading moved to vllm-bnb-plugin


def canonical(name: str) -> str:
    """A distribution name as pip compares it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def requires(distribution: str) -> list:
    """The installed distribution's Requires-Dist, parsed (unparsable lines skipped)."""
    from packaging.requirements import InvalidRequirement, Requirement

    found = []
    for line in metadata.requires(distribution) or []:
        try:
            found.append(Requirement(line))
        except InvalidRequirement:
            continue
    return found


def _applies(requirement, extra: str = "") -> bool:
    return requirement.marker is None or requirement.marker.evaluate({"extra": extra})


def extra_requirements(root: Path, extra: str) -> list:
    """The Requirements of one extra of the project's pyproject.toml ([] when it has none)."""
    import tomllib

    from packaging.requirements import Requirement

    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return []
    table = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    return [Requirement(text) for text in table.get("optional-dependencies", {}).get(extra, [])]


def extra_pins(root: Path) -> dict:
    """{package: Requirement} of the project's GPU extra (pyproject.toml)."""
    return {canonical(r.name): r for r in extra_requirements(root, GPU_EXTRA)}


def trl_vllm_range():
    """The vLLM range the installed TRL checks when it imports vLLM (it warns outside it), read
    from its own source (trl.import_utils.is_vllm_available); None when it cannot be read."""
    from packaging.specifiers import SpecifierSet

    try:
        from trl import import_utils

        source = inspect.getsource(import_utils.is_vllm_available)
    except (ImportError, AttributeError, OSError, TypeError):
        return None
    match = re.search(r'Version\("([^"]+)"\)\s*<=\s*\w+\s*<=\s*Version\("([^"]+)"\)', source)
    return SpecifierSet(f">={match[1]},<={match[2]}") if match else None


def accepted_ranges(package: str) -> list[tuple[str, object]]:
    """[(who, SpecifierSet)] for every installed library that bounds `package`: TRL's and
    Unsloth's requirements on it (TRL's extra named after it included, e.g. trl[vllm]), and
    TRL's import-time vLLM check."""
    name = canonical(package)
    found: dict[str, list[str]] = {}
    specs = {}
    for owner in GATEKEEPERS:
        version = installed_version(owner)
        if version is None:
            continue
        for requirement in requires(owner):
            if canonical(requirement.name) != name or not requirement.specifier:
                continue
            if not (_applies(requirement) or _applies(requirement, name)):
                continue
            key = str(requirement.specifier)
            specs[key] = requirement.specifier
            found.setdefault(key, []).append(f"{owner} {version}")
    trl = installed_version("trl")
    checked = trl_vllm_range() if name == "vllm" and trl else None
    if checked is not None:
        key = str(checked)
        specs[key] = checked
        found.setdefault(key, []).append(f"TRL {trl}'s vLLM check")
    return [(" and ".join(dict.fromkeys(who)), specs[key]) for key, who in found.items()]


def check_extras(root: Path) -> list[Check]:
    """One row per installed package of the GPU extras: against the project's pin (outside:
    untested, a warning), against what the installed TRL / Unsloth accept and against its own
    requirements on the stack (outside: known to break, a blocker)."""
    from packaging.version import InvalidVersion, Version

    pins = extra_pins(root)
    findings = []
    for name in sorted({*pins, *map(canonical, EXTRA_PACKAGES)}):
        version = installed_version(name)
        if version is None:
            continue
        try:
            release = Version(version).base_version  # "0.30.0" of "0.30.0+cu129", as TRL does
        except InvalidVersion:
            release = version
        broken, unmet = [], []
        for who, spec in accepted_ranges(name):
            if not spec.contains(release, prereleases=True):
                broken.append(f"outside what {who} accepts ({spec})")
        for requirement in requires(name):
            have = installed_version(requirement.name)
            if not requirement.specifier or have is None or not _applies(requirement):
                continue
            if not requirement.specifier.contains(have, prereleases=True):
                text = f"it requires {requirement.name}{requirement.specifier}, {have} installed"
                (broken if canonical(requirement.name) in STACK else unmet).append(text)
        pin = pins.get(name)
        fix = f'pip install "{pin}"' if pin else f"install a {name} inside those ranges"
        if broken:
            findings.append(Check(FAIL, name, f"{name} {version}: {'; '.join(broken)}", fix))
            continue
        if unmet:
            findings.append(Check(WARN, name, f"{name} {version}: {'; '.join(unmet)}", fix))
        if pin is not None and not pin.specifier.contains(version, prereleases=True):
            findings.append(
                Check(
                    WARN,
                    name,
                    f"{name} {version} is outside the project's pin {pin.specifier} (untested "
                    "with the rest of the stack)",
                    fix,
                )
            )
        elif not unmet:
            pinned = f", the project's pin {pin.specifier}" if pin is not None else ""
            accepted = "".join(f", {who}: {spec}" for who, spec in accepted_ranges(name))
            findings.append(Check(OK, name, f"{name} {version}{pinned}{accepted}"))
    return findings


# --- the fast kernels of a hybrid model (the project's `[kernels]` extra) ------------------------

KERNELS_EXTRA = "kernels"  # [project.optional-dependencies] kernels: written for hybrid models
# The kernels that are source distributions built against the installed torch (nvcc, unless a
# prebuilt wheel for this torch and CUDA exists); flash-linear-attention is Triton, no build.
COMPILED_KERNELS = ("causal-conv1d", "mamba-ssm")
KERNELS_INSTALL = "pip install --no-build-isolation -e '.[kernels]'"


def _torch_build() -> str:
    """The installed torch's release and CUDA major version, as "torch 2.13 + CUDA 13" (no
    CUDA for a CPU build)."""
    import torch

    release = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    cuda = torch.version.cuda
    return f"torch {release}" + (f" + CUDA {cuda.split('.')[0]}" if cuda else "")


def check_kernels(root: Path, gpu_run: bool) -> list[Check]:
    """The `[kernels]` extra of a hybrid model's project: one row saying whether its
    linear-attention/convolution/Mamba layers run the fast kernels (each distribution
    installed, inside its pin) or transformers' PyTorch fallback. A warning when a GPU run
    would use the fallback (for the CPU the kernels do not apply: information); no row for a
    project without the extra."""
    layers = "the model's linear-attention/convolution/Mamba layers"
    requirements = [r for r in extra_requirements(root, KERNELS_EXTRA) if _applies(r)]
    if not requirements:
        return []
    present, missing, off_pin = [], [], []
    for requirement in requirements:
        version = installed_version(requirement.name)
        if version is None:
            missing.append(requirement.name)
            continue
        present.append(f"{requirement.name} {version}")
        if requirement.specifier and not requirement.specifier.contains(version, prereleases=True):
            off_pin.append(f"{requirement.name} {version} (pin {requirement.specifier})")
    if missing:
        compiled = [name for name in missing if canonical(name) in COMPILED_KERNELS]
        fix = KERNELS_INSTALL + " (a CUDA GPU"
        if compiled:
            verb = "compiles" if len(compiled) == 1 else "compile"
            fix += (
                f"; {' and '.join(compiled)} {verb} with nvcc when no prebuilt wheel matches "
                f"{_torch_build()}"
            )
        also = f" ({', '.join(present)} installed)" if present else ""
        message = (
            f"{', '.join(missing)} not installed{also}: {layers} run transformers' PyTorch "
            "fallback (correct, much slower; the plan's memory estimate counts it)"
        )
        return [Check(WARN if gpu_run else INFO, "kernels", message, fix + ")")]
    if off_pin:
        message = f"{', '.join(off_pin)}: outside the project's pins (untested with this stack)"
        return [Check(WARN, "kernels", message, KERNELS_INSTALL)]
    return [Check(OK, "kernels", f"{', '.join(present)} installed: {layers} use them")]


def check_sampling(recipe) -> list[Check]:
    """Sampling that biases vLLM's importance-sampling correction (`recipe.sampling_bias`): a
    warning with the fix, before a run (the run warns again when it starts)."""
    from ..recipe import sampling_bias, sampling_bias_message

    found = sampling_bias(recipe.training, uses_vllm(recipe))
    if not found:
        return []
    message, _, fix = sampling_bias_message(found, {}).partition(" Fix: ")
    return [Check(WARN, "sampling", message, fix)]


def uses_vllm(recipe) -> bool:
    """Whether the run generates with vLLM: `use_vllm`, or the Unsloth backend's
    `fast_inference` (its own vLLM engine)."""
    return bool(recipe.training.use_vllm or getattr(recipe.backend, "fast_inference", False))


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def check_optional_packages(recipe, cuda: bool) -> list[Check]:
    training, model, tier = recipe.training, recipe.model, recipe.project.tier
    findings = []
    if training.use_vllm and cuda and not _installed("vllm"):
        findings.append(
            Check(
                FAIL,
                "vllm",
                "use_vllm is true but vLLM is not installed",
                "pip install -e '.[gpu]' (or set use_vllm: false: slower generation)",
            )
        )
    vllm = installed_version("vllm")
    if uses_vllm(recipe) and model.load_in_4bit and vllm:
        from packaging.version import Version

        if Version(Version(vllm).base_version) >= Version(VLLM_BNB_PLUGIN_SINCE) and not (
            installed_version("vllm-bnb-plugin")
        ):
            findings.append(
                Check(
                    FAIL,
                    "vllm-bnb-plugin",
                    f"vLLM {vllm} loads 4-bit (bitsandbytes) weights only with the separate "
                    "vllm-bnb-plugin package (else: Unknown quantization method: bitsandbytes)",
                    "pip install vllm-bnb-plugin, or set use_vllm: false (or load_in_4bit: false)",
                )
            )
    needs_bnb = model.load_in_4bit or model.load_in_8bit or "8bit" in str(training.optim)
    if needs_bnb and cuda and not _installed("bitsandbytes"):
        findings.append(
            Check(
                FAIL,
                "bitsandbytes",
                "the recipe uses 4-bit weights or an 8-bit optimizer but bitsandbytes is missing",
                "pip install -e '.[gpu]'",
            )
        )
    if tier.distributed.startswith("zero") and not _installed("deepspeed"):
        findings.append(
            Check(
                FAIL if cuda else WARN,
                "deepspeed",
                f"the {tier.distributed} launch config needs DeepSpeed, which is not installed",
                "pip install -e '.[gpu]'",
            )
        )
    return findings


def check_hub(recipe, offline: bool) -> list[Check]:
    """Token for gated models; reachability of the model and dataset ids."""
    from huggingface_hub import HfApi, get_token

    name = recipe.model.model_name_or_path
    if not name:
        fix = "set model_name_or_path in configs/grpo.yaml (a Hub id or a folder)"
        return [Check(FAIL, "model", "the recipe names no model_name_or_path", fix)]
    findings = []
    local_model = Path(name).exists()
    if recipe.project.gated and not local_model and not get_token():
        findings.append(
            Check(
                FAIL,
                "hub token",
                f"{name} is gated and no Hugging Face token is configured",
                "accept the licence on the model page, then `hf auth login` (or set HF_TOKEN)",
            )
        )
    if offline:
        findings.append(Check(INFO, "hub", "offline: Hub checks skipped"))
        return findings
    api = HfApi()
    targets = [] if local_model else [("model", name)]
    from ..data import generated, is_local

    remote = not generated(recipe.script, recipe.project.task)  # generated: no Hub
    if remote and not is_local(recipe.script.dataset_name):
        targets.append(("dataset", recipe.script.dataset_name))
    for kind, repo in targets:
        try:
            info = api.model_info if kind == "model" else api.dataset_info
            info(repo, timeout=10)
            findings.append(Check(OK, "hub", f"{kind} {repo} is reachable"))
        except Exception as err:  # network errors, 401/404: all are findings, not crashes
            findings.append(
                Check(
                    FAIL,
                    "hub",
                    f"cannot reach {kind} {repo}: {type(err).__name__}: {str(err)[:160]}",
                    "check the id, your network and token (or pass --offline to skip)",
                )
            )
    return findings


def percentile(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def check_reward_settings(recipe) -> list[Check]:
    """The task's reward settings, checked as training checks them (the label set, the code
    sandbox's isolation level and limits)."""
    try:
        settings = recipe.project.task.reward_settings(recipe.task)
    except UserError as err:
        return [Check(FAIL, "rewards", str(err), "see the message; training stops there too")]
    findings = []
    for name, value in settings.items():
        if not hasattr(value, "describe"):
            continue
        facts = value.describe()
        check = "sandbox" if "isolation" in facts else name
        line = value.summary() if hasattr(value, "summary") else str(facts)
        if facts.get("isolation") == "process":
            fix = "install bubblewrap (apt-get install bubblewrap) or enable user namespaces"
            findings.append(Check(WARN, check, f"{line}: NOT isolated from your files", fix))
        else:
            findings.append(Check(OK, check, line))
    return findings


def gpu_memory() -> list[tuple[int, int]]:
    """(free, total) bytes of each visible CUDA GPU, as the driver reports them now (memory
    other processes hold, a judge server among them, is not free)."""
    import torch

    if not torch.cuda.is_available():
        return []
    return [torch.cuda.mem_get_info(i) for i in range(torch.cuda.device_count())]


def check_judge_placement(recipe, gpu_run: bool, memory=gpu_memory) -> list[Check]:
    """A judge reward's server on this machine shares its GPUs with training: the memory plan's
    peak per GPU (`estimated_peak_gib`) must still be free on every GPU beside it. `memory()`:
    (free, total) bytes per GPU (`gpu_memory`), read only for a judge on this machine. The fix
    names the GPU share the judge may take (`rewards.judge.colocated_share`), or a GPU of its
    own."""
    from ..rewards.judge import colocated_share, on_this_machine

    try:
        settings = recipe.project.task.reward_settings(recipe.task)
    except UserError:
        return []  # check_reward_settings names it
    url = settings.get("judge_base_url")
    if not url:
        return []
    if not on_this_machine(str(url)):
        return [Check(OK, "judge", f"judge server {url}: elsewhere, no GPU shared with training")]
    memory = memory() if gpu_run else []
    if not memory:
        return [Check(OK, "judge", f"judge server {url}: on this machine; training uses no GPU")]
    peak = recipe.project.tier.estimated_peak_gib
    need = peak * 1024**3
    short = [(i, free, total) for i, (free, total) in enumerate(memory) if free < need]
    if not short:
        least = min(free for free, _ in memory)
        return [Check(OK, "judge", f"judge server {url}: on this machine; every GPU has "
                      f"{_gib(least)} or more free, the plan needs {peak:.1f} GiB")]  # fmt: skip
    i, free, total = short[0]
    share = colocated_share(total / 1024**3, peak)
    held = _gib(total - free)
    cap = (
        f"or cap it: vllm serve ... --gpu-memory-utilization {share:.2f}"
        if share > 0
        else "no share of a training GPU is left for it"
    )
    return [
        Check(
            FAIL,
            "judge",
            f"judge server {url} on this machine: GPU {i} has {_gib(free)} free of {_gib(total)} "
            f"({held} held, the judge server's among it); the memory plan needs {peak:.1f} GiB "
            f"per GPU ({len(short)} of {len(memory)} GPU(s) short)",
            "serve the judge on a GPU training does not use (CUDA_VISIBLE_DEVICES=<spare> vllm "
            f"serve ...), or on another machine (judge_base_url), {cap}",
        )
    ]


def check_data(recipe, rows_limit: int, offline: bool, hub_failed: bool) -> list[Check]:
    """Load and validate the data, then measure prompt lengths with the model's tokenizer."""
    from .. import data
    from ..tokenizer import load_tokenizer

    task = recipe.project.task
    remote = not data.is_local(recipe.script.dataset_name)
    if remote and not data.generated(recipe.script, task) and (offline or hub_failed):
        why = "offline" if offline else "the Hub is unreachable"
        return [Check(WARN, "data", f"{why}: {recipe.script.dataset_name} not loaded", "")]
    try:
        rows = data.load_training_rows(recipe.script, recipe.task, task)
    except UserError as err:
        return [Check(FAIL, "data", str(err), "fix the data or the column settings")]
    findings = [
        Check(OK, "data", f"{len(rows)} rows from {recipe.script.dataset_name}, columns valid")
    ]
    if data.generated(recipe.script, task):
        findings.append(check_generated(recipe, rows))
    checked = rows.select(range(min(data.GOLD_CHECK_ROWS, len(rows))))
    conversations = data.to_conversations(checked, recipe.script, recipe.task, task)
    if golds := data.gold_problem(conversations, recipe, recipe.script.dataset_name):
        findings.append(Check(FAIL if golds[0] else WARN, "gold answers", golds[1]))
    try:
        tokenizer = load_tokenizer(recipe.model, recipe.training.trust_remote_code)
    except UserError as err:
        return [*findings, Check(WARN, "prompt lengths", f"tokenizer unavailable: {err}")]
    sample = rows.select(range(min(rows_limit, len(rows))))
    conversations = data.to_conversations(sample, recipe.script, recipe.task, task)
    kwargs = recipe.training.chat_template_kwargs  # as TRL renders the prompts
    lengths = [data.prompt_token_count(tokenizer, row["prompt"], kwargs) for row in conversations]
    limit = recipe.script.max_prompt_tokens
    dropped = sum(length > limit for length in lengths)
    p50, p90, top = percentile(lengths, 0.5), percentile(lengths, 0.9), max(lengths)
    suggested = int(math.ceil(percentile(lengths, 0.99) / 64) * 64)
    message = (
        f"prompt tokens over {len(lengths)} rows: p50 {p50}, p90 {p90}, max {top}; "
        f"max_prompt_tokens={limit} drops {dropped} ({100 * dropped / len(lengths):.1f}%)"
    )
    fix = f"recommended max_prompt_tokens: {suggested} (keeps 99% of rows)"
    findings.append(
        Check(WARN if dropped > 0.05 * len(lengths) else OK, "prompt lengths", message, fix)
    )
    return findings


def check_generated(recipe, rows) -> Check:
    """A task that generates its problems (the procedural task): the held-out split make
    evaluate scores, and that none of its prompts is a training prompt."""
    from .. import data

    script, task = recipe.script, recipe.project.task
    whole = dataclasses.replace(script, max_train_samples=None)
    train = data.load_training_rows(whole, recipe.task, task)
    held = data.load_training_rows(whole, recipe.task, task, script.dataset_test_split)
    shared = set(train[script.prompt_column]) & set(held[script.prompt_column])
    if shared:
        return Check(
            FAIL,
            "held-out data",
            f"{len(shared)} of the {len(held)} generated held-out problems are training "
            f"problems (e.g. {sorted(shared)[0]!r})",
            "generate the held-out split from another seed (grpo_kit.procedural)",
        )
    return Check(
        OK,
        "held-out data",
        f"generated offline: {len(train)} training problems, {len(held)} held out "
        f"({script.dataset_test_split}) for make evaluate, none of them a training problem",
    )


def check_disk(recipe) -> list[Check]:
    output = Path(recipe.training.output_dir)
    existing = output if output.exists() else Path.cwd()
    free = shutil.disk_usage(existing).free
    if free < 20 * 1024**3:
        return [
            Check(
                WARN,
                "disk",
                f"{_gib(free)} free for {output}",
                "checkpoints of big models need tens of GiB",
            )
        ]
    return [Check(OK, "disk", f"{_gib(free)} free for {output}")]


def parse_args(argv: Sequence[str] | None):
    parser = argparse.ArgumentParser(
        prog="grpo doctor",
        description="Environment checks; other arguments are recipe overrides, as for train.",
    )
    parser.add_argument("--offline", action="store_true", help="skip checks that need the network")
    parser.add_argument("--rows", type=int, default=2000, help="rows measured for prompt lengths")
    return parser.parse_known_args(argv)


def hub_offline() -> None:
    """--offline: no Hub request from here on. The variable alone comes too late (the libraries
    read HF_HUB_OFFLINE when they are imported, before the command runs: the tokenizer's load
    spent ~45 s on Hub retries), so their flags are set too."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    for module in ("huggingface_hub.constants", "datasets.config"):
        if module in sys.modules:
            sys.modules[module].HF_HUB_OFFLINE = True


def diagnose(argv: Sequence[str] | None = None) -> list[Check]:
    import torch

    from ..recipe import parse_recipe
    from ..training import ensure_offline_model

    args, recipe_args = parse_args(argv)
    offline = args.offline or os.environ.get("HF_HUB_OFFLINE") == "1"
    if offline:
        hub_offline()
    cuda = torch.cuda.is_available()
    cpu_requested = "--use_cpu" in recipe_args or "--smoke" in recipe_args
    findings = check_python()
    try:
        # Without a GPU, read the recipe as it is (a GPU recipe parses here) and check it.
        recipe = parse_recipe(recipe_args, read_only=not cuda)
    except UserError as err:
        return [*findings, Check(FAIL, "recipe", str(err), "fix configs/grpo.yaml")]
    findings.append(Check(OK, "recipe", "recipe parses against the installed TRL"))
    cpu_requested = cpu_requested or recipe.script.smoke  # --smoke, --trial, --smoke-distributed
    ensure_offline_model(recipe)  # --smoke: the tiny model, built on first use
    nvidia = probe_nvidia()
    findings += check_hardware(recipe, cuda, cpu_requested, nvidia)
    findings += check_cuda_stack(recipe, cuda, cpu_requested, nvidia)
    findings += check_versions(recipe.project.root)
    findings += check_extras(recipe.project.root)
    findings += check_optional_packages(recipe, cuda)
    findings += check_kernels(recipe.project.root, recipe.project.tier.is_gpu and not cpu_requested)
    findings += check_sampling(recipe)
    hub = check_hub(recipe, offline)
    findings += hub
    hub_failed = any(f.check == "hub" and f.level == FAIL for f in hub)
    findings += check_reward_settings(recipe)
    findings += check_judge_placement(recipe, cuda and not cpu_requested)
    findings += check_data(recipe, args.rows, offline, hub_failed)
    findings += check_disk(recipe)
    return findings


def show(findings: list[Check], title: str = "doctor") -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=escape(title))  # findings are data: `.[kernels]` stays as written
    for column in ("", "check", "finding", "what to do"):
        table.add_column(column)
    style = {OK: "green", INFO: "blue", WARN: "yellow", FAIL: "bold red"}
    for finding in findings:
        table.add_row(
            f"[{style[finding.level]}]{escape(finding.level)}",
            *(escape(text) for text in (finding.check, finding.message, finding.fix)),
        )
    Console(width=160).print(table)


def doctor(argv: Sequence[str] | None = None) -> None:
    from ..project import load as load_project

    project = load_project()
    findings = diagnose(argv)
    show(findings, f"doctor: {project.model} on the {project.tier.name} tier")
    blockers = [f for f in findings if f.level == FAIL]
    if blockers:
        raise UserError(f"{len(blockers)} blocker(s): " + "; ".join(f.check for f in blockers))
    print("doctor: nothing blocks training")


def main(argv: Sequence[str] | None = None) -> int:
    code = run(doctor, argv)
    return 1 if code == 2 else code
