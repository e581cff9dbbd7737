"""doctor: it must tell the truth about the GPU against the project's tier ([tool.grpo.tier])
and exit as documented. torch.cuda is mocked, so every case runs on any machine."""

import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from conftest import CPU_RECIPE, KIT, TASKS, load, make_project, sample_recipe
from grpo_kit.commands import doctor, gpu_check

GIB = 1024**3
# Tiers as the template writes them into [tool.grpo.tier].
GPU_24GB = """\
name = "24GB"
memory_gib = 24.0
gpus_per_node = 1
processes = 1
estimated_peak_gib = 18.5"""
MULTI_GPU = """\
name = "multi-gpu"
memory_gib = 80.0
gpus_per_node = 8
nodes = 1
processes = 6
distributed = "zero3"
accelerate_config = "configs/accelerate/zero3.yaml"
vllm_server_gpus = 2
estimated_peak_gib = 60.0"""
# The recipes as generated, naming the model (a CPU one, and a GPU one: without use_cpu, on the
# sample data since the Hub is out of reach).
MODEL = "model_name_or_path: kit/test-model\n"
GPU_RECIPE = (
    CPU_RECIPE.replace("use_cpu: true\n", "") + MODEL + "dataset_name: data/sample_math.jsonl\n"
)
TIERS = {"cpu": 'name = "cpu"', "24GB": GPU_24GB, "multi-gpu": MULTI_GPU}


def cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.fixture
def no_gpu(monkeypatch):
    """This machine, as doctor sees it, has no CUDA GPU."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.mark.parametrize("tier", list(TIERS))
def test_doctor_reports_the_missing_gpu_truthfully(tier, no_gpu, tmp_path, monkeypatch, capsys):
    root = make_project(tmp_path, tier=TIERS[tier], recipe=CPU_RECIPE + MODEL)
    monkeypatch.chdir(root)
    name = load(root).tier.name
    code = doctor.main(["--offline"])
    out = capsys.readouterr().out
    if name == "cpu":
        assert code == 0 and "no GPU, and the recipe trains on the CPU" in out
    else:
        assert code == 1
        assert "no CUDA GPU found" in out and name in out


def fake_gpus(
    monkeypatch,
    count: int,
    memory_gib: float,
    bf16: bool = True,
    name: str = "Fake GPU",
    capability: tuple[int, int] = (8, 6),
) -> None:
    """torch.cuda as it is on a machine with `count` GPUs of `memory_gib` each."""
    from types import SimpleNamespace

    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: name)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i=0: capability)
    properties = SimpleNamespace(total_memory=int(memory_gib * GIB))
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i=0: properties)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: bf16)


def hardware(tier: str, root):
    """doctor's hardware findings {check: (level, message)} for a project of `tier` (made in
    `root`) on the faked machine."""
    recipe = sample_recipe(make_project(root, tier=tier))
    findings = doctor.check_hardware(recipe, cuda=True, cpu_requested=False)
    return {f.check: (f.level, f.message) for f in findings}


def test_doctor_checks_the_gpus_against_the_tier(tmp_path, monkeypatch):
    """The GPU count per node, the memory and the estimate all come from [tool.grpo.tier]."""
    fake_gpus(monkeypatch, 2, 80.0)
    found = hardware(MULTI_GPU, tmp_path / "multi")
    assert found["gpu count"] == (
        doctor.FAIL,
        "2 GPU(s) visible, the multi-gpu tier expects 8 per node",
    )
    assert "gpu memory" not in found
    fake_gpus(monkeypatch, 8, 40.0)  # below the estimated peak: it cannot fit
    found = hardware(MULTI_GPU, tmp_path / "small")
    assert "gpu count" not in found
    level, message = found["gpu memory"]
    assert level == doctor.FAIL and "tuned for 80 GiB (estimated peak 60.0 GiB)" in message
    fake_gpus(monkeypatch, 1, 20.0)  # below the tier, above the estimate: a warning
    assert hardware(GPU_24GB, tmp_path / "tight")["gpu memory"][0] == doctor.WARN
    fake_gpus(monkeypatch, 1, 80.0)  # far bigger than the tier assumes
    level, message = hardware(GPU_24GB, tmp_path / "big")["gpu memory"]
    assert level == doctor.WARN and "more than the 24GB tier assumes" in message
    fake_gpus(monkeypatch, 1, 24.0)
    assert set(hardware(GPU_24GB, tmp_path / "fits")) == {"torch", "gpu"}


def test_doctor_passes_the_offline_smoke_setup(capsys):
    assert doctor.main(["--offline", "--smoke"]) == 0
    out = capsys.readouterr().out
    assert "columns valid" in out and "recommended max_prompt_tokens" in out


def test_doctor_flags_a_broken_recipe(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("warmup_ratio: 0.1\n", encoding="utf-8")
    assert doctor.main(["--offline", "--config", str(bad)]) == 1
    assert "recipe" in capsys.readouterr().out


def test_percentile():
    assert doctor.percentile([1, 2, 3, 4], 0.5) == 2
    assert doctor.percentile([5], 0.9) == 5
    assert doctor.percentile(list(range(1, 101)), 0.99) == 99


def test_gpu_check_needs_a_gpu(no_gpu, capsys):
    assert gpu_check.main([]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


@pytest.mark.gpu
def test_gpu_check_on_a_small_model_stays_under_the_tier_budget(tmp_path, monkeypatch):
    """A GPU tier's recipe, offline: the tiny model trains on the GPU under the tier's cap."""
    if not cuda():
        pytest.skip("needs a CUDA GPU")
    monkeypatch.chdir(make_project(tmp_path, tier=GPU_24GB, recipe=GPU_RECIPE))
    figures = gpu_check.gpu_check(["--steps", "2"])
    assert figures["tier"] == "24GB" and figures["cap_gib"] <= 24.0
    assert figures["torch_peak_reserved_gib"] <= figures["cap_gib"]


def test_gpu_check_scales_vllms_share_to_the_tier_cap():
    """vLLM's share is a fraction of the whole card: 0.3 of a 22 GiB tier on a 139.8 GiB H200
    is 6.6 GiB, not 41.9 GiB."""
    share = gpu_check.scaled_share(0.3, cap_gib=22.0, card_gib=139.8)
    assert share * 139.8 == pytest.approx(0.3 * 22.0, rel=1e-3)
    assert gpu_check.scaled_share(0.3, cap_gib=22.0, card_gib=22.0) == 0.3


def test_gpu_check_verdict_and_what_makes_the_estimate_inapplicable():
    assert gpu_check.verdict(20.0, 18.0) == "pass"
    assert gpu_check.verdict(25.0, 18.0) == "fail" and gpu_check.verdict(12.0, 18.0) == "fail"
    with pytest.raises(gpu_check.NotMeasured, match="no memory was measured"):
        gpu_check.verdict(0.0, 18.0)
    assert gpu_check.changed_fields(["--max_steps", "3", "--report_to=none"]) == []
    assert gpu_check.changed_fields(["--load_in_4bit", "true", "--lora_r=8"]) == [
        "load_in_4bit",
        "lora_r",
    ]


# The project the template generates: the install hints of the kit name its extras.
PROJECT_PYPROJECT = KIT.parents[2] / "{{cookiecutter.project_slug}}" / "pyproject.toml"


def project_extras() -> set[str]:
    """The extras a generated project's pyproject.toml declares (the template's file is Jinja,
    so its table is read line by line)."""
    text = PROJECT_PYPROJECT.read_text(encoding="utf-8")
    table = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([A-Za-z0-9_-]+) = \[", table, flags=re.MULTILINE))


def test_every_install_hint_names_an_extra_that_exists():
    """A fix that says `pip install -e '.[x]'` (run in the project) must name an extra of the
    project's pyproject.toml."""
    if not PROJECT_PYPROJECT.is_file():
        pytest.skip("the template is not beside the kit")
    extras = project_extras()
    assert "gpu" in extras
    hints = 0
    for path in Path(KIT).rglob("*.py"):
        for named in re.findall(r"\.\[([a-z,]+)\]", path.read_text(encoding="utf-8")):
            assert set(named.split(",")) <= extras, f"{path}: .[{named}]"
            hints += 1
    assert hints, "the kit's install hints were not found"


@pytest.mark.parametrize("task", TASKS)
def test_doctor_reports_the_reward_settings_and_the_sandbox_in_use(task, projects):
    recipe = sample_recipe(projects(task))
    findings = doctor.check_reward_settings(recipe)
    assert all(f.level != doctor.FAIL for f in findings), findings
    if recipe.project.task.name == "code":  # the isolation level the rewards run with, in one line
        (sandbox,) = [f for f in findings if f.check == "sandbox"]
        assert "isolation" in sandbox.message


def test_a_recipe_without_a_model_is_one_finding(no_gpu, tmp_path, monkeypatch, capsys):
    recipe = CPU_RECIPE.replace("model_name_or_path: kit/test-model\n", "")
    assert "model_name_or_path" not in recipe
    monkeypatch.chdir(make_project(tmp_path, recipe=recipe))
    assert doctor.main(["--offline"]) == 1
    out = capsys.readouterr().out
    assert "names no model_name_or_path" in out and "Traceback" not in out


# --- the driver and the compute capability against the installed CUDA builds -------------------

GPU_16GB = """\
name = "16GB"
memory_gib = 14.6
gpus_per_node = 1
processes = 1
estimated_peak_gib = 12.0"""
# torch 2.13's CUDA 13.0 build on x86_64: its arch list (no sm_70: Volta is gone).
CU130_ARCH_LIST = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]


@pytest.fixture
def cuda13_torch(monkeypatch):
    """The installed torch, as PyPI's CUDA 13.0 build (torch 2.13 from PyPI) reports itself."""
    import torch

    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.cuda, "get_arch_list", lambda: list(CU130_ARCH_LIST))


def machine(monkeypatch, driver: str, *gpus: tuple[str, tuple[int, int]]) -> doctor.NvidiaMachine:
    """What nvidia-smi reports on the faked machine (doctor reads it through probe_nvidia)."""
    found = doctor.NvidiaMachine(driver, tuple(doctor.NvidiaGpu(n, cc) for n, cc in gpus))
    monkeypatch.setattr(doctor, "probe_nvidia", lambda: found)
    return found


def by_check(findings) -> dict:
    return {f.check: f for f in findings}


def test_an_old_driver_is_a_blocker_with_its_fix(no_gpu, cuda13_torch, tmp_path, monkeypatch):
    """torch 2.13 from PyPI is a CUDA 13 build: on driver 535 torch sees no GPU at all. doctor
    names the driver, what it needs (>= 580: NVIDIA's minimum for CUDA 13) and the CUDA 12 build
    of torch that runs on this driver and this GPU (torch's own table of its builds)."""
    machine(monkeypatch, "535.104.05", ("NVIDIA A10G", (8, 6)))
    monkeypatch.chdir(make_project(tmp_path, tier=GPU_24GB, recipe=CPU_RECIPE + MODEL))
    found = by_check(doctor.diagnose(["--offline"]))
    driver = found["driver"]
    assert driver.level == doctor.FAIL
    assert "535.104.05" in driver.message and ">= 580" in driver.message
    assert "CUDA 13.0 build" in driver.message
    assert "TORCH_INDEX=https://download.pytorch.org/whl/cu129" in driver.fix
    assert "install NVIDIA driver 580 or newer" in driver.fix
    gpu = found["gpu"]
    assert gpu.level == doctor.FAIL and "torch cannot use the 1 NVIDIA GPU(s)" in gpu.message
    assert doctor.main(["--offline"]) == 1


def test_a_driver_new_enough_passes(cuda13_torch, tmp_path, monkeypatch):
    fake_gpus(monkeypatch, 1, 22.0, name="NVIDIA A10G", capability=(8, 6))
    nvidia = machine(monkeypatch, "580.65.06", ("NVIDIA A10G", (8, 6)))
    recipe = sample_recipe(make_project(tmp_path, tier=GPU_24GB))
    found = by_check(doctor.check_cuda_stack(recipe, True, False, nvidia))
    assert found["driver"].level == doctor.OK and ">= 580" in found["driver"].message
    assert found["compute capability"].level == doctor.OK
    assert "sm_86" in found["compute capability"].message


def test_a_v100_is_not_in_torchs_build(cuda13_torch, tmp_path, monkeypatch, capsys):
    """sm_70 (V100) is not in torch 2.13's CUDA 13 build; torch's CUDA 12.6 build still has it
    (torch.cuda.PYTORCH_RELEASES_CODE_CC), and its driver minimum is 525."""
    fake_gpus(monkeypatch, 1, 15.8, bf16=False, name="Tesla V100-SXM2-16GB", capability=(7, 0))
    nvidia = machine(monkeypatch, "580.65.06", ("Tesla V100-SXM2-16GB", (7, 0)))
    root = make_project(tmp_path, tier=GPU_16GB, recipe=CPU_RECIPE + MODEL)
    found = by_check(doctor.check_cuda_stack(sample_recipe(root), True, False, nvidia))
    capability = found["compute capability"]
    assert capability.level == doctor.FAIL
    assert "Tesla V100-SXM2-16GB (sm_70)" in capability.message
    assert "CUDA 13.0 build" in capability.message and "sm_75" in capability.message
    assert "TORCH_INDEX=https://download.pytorch.org/whl/cu126" in capability.fix
    assert "driver >= 525" in capability.fix
    assert "compute capability >= 7.5 (T4, RTX 20xx" in capability.fix
    monkeypatch.chdir(root)
    assert doctor.main(["--offline"]) == 1
    assert "compute capability" in capsys.readouterr().out


def test_vllm_needs_a_turing_or_newer_gpu(cuda13_torch, tmp_path, monkeypatch):
    fake_gpus(monkeypatch, 1, 15.8, bf16=False, name="Tesla V100-SXM2-16GB", capability=(7, 0))
    nvidia = machine(monkeypatch, "580.65.06", ("Tesla V100-SXM2-16GB", (7, 0)))
    recipe = sample_recipe(make_project(tmp_path, tier=GPU_16GB, recipe=GPU_RECIPE + VLLM))
    found = by_check(doctor.check_cuda_stack(recipe, True, False, nvidia))
    assert found["vllm"].level == doctor.FAIL and "7.5" in found["vllm"].message


def test_the_cpu_build_of_torch_on_a_gpu_machine(no_gpu, tmp_path, monkeypatch):
    import torch

    monkeypatch.setattr(torch.version, "cuda", None)
    nvidia = machine(monkeypatch, "580.65.06", ("NVIDIA L4", (8, 9)))
    recipe = sample_recipe(make_project(tmp_path, tier=GPU_24GB))
    found = by_check(doctor.check_cuda_stack(recipe, False, False, nvidia))
    assert found["torch build"].level == doctor.FAIL
    assert "CPU build" in found["torch build"].message
    assert "TORCH_INDEX=pypi" in found["torch build"].fix


def test_nvidia_smi_is_read_also_without_compute_cap(tmp_path, monkeypatch):
    """An older nvidia-smi has no compute_cap field: the driver is still read."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(
        "#!/bin/bash\n"
        'case "$*" in *compute_cap*) [ -n "$OLD_SMI" ] && exit 2;'
        ' echo "NVIDIA A10G, 535.104.05, 8.6";; *) echo "NVIDIA A10G, 535.104.05";; esac\n'
    )
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    assert doctor.probe_nvidia() == doctor.NvidiaMachine(
        "535.104.05", (doctor.NvidiaGpu("NVIDIA A10G", (8, 6)),)
    )
    monkeypatch.setenv("OLD_SMI", "1")
    assert doctor.probe_nvidia() == doctor.NvidiaMachine(
        "535.104.05", (doctor.NvidiaGpu("NVIDIA A10G", None),)
    )


def test_the_cuda_of_a_wheel_and_the_drivers_it_needs():
    assert doctor._cuda_of_local_version("0.30.0+cu129") == "12.9"
    assert doctor._cuda_of_local_version("2.13.0+cu130") == "13.0"
    assert doctor._cuda_of_local_version("0.30.0") is None
    assert doctor._driver_major_for("535.104.05") == 12
    assert doctor._driver_major_for("580.65.06") == 13
    assert doctor._driver_major_for("470.1") == 11
    assert doctor._code_capabilities(["sm_75", "sm_100a", "compute_120"]) == [75, 100, 120]
    assert doctor.runs_on((8, 6), 80) and not doctor.runs_on((7, 0), 75)
    assert not doctor.runs_on((9, 0), 86)  # a cubin runs within its major version only


# --- the GPU extras against their pins and what TRL / Unsloth accept ---------------------------

VLLM = "use_vllm: true\nvllm_mode: colocate\n"


def fake_distribution(site: Path, name: str, version: str, requires: Sequence[str] = ()):
    """An installed distribution as importlib.metadata finds it on sys.path (a dist-info)."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def site(tmp_path, monkeypatch) -> Path:
    """A site-packages folder on sys.path for fake installed distributions."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    return folder


def gpu_extra(root: Path, *pins: str) -> Path:
    """A pyproject.toml in `root` whose [gpu] extra pins `pins`."""
    root.mkdir(parents=True, exist_ok=True)
    body = ", ".join(f'"{p}"' for p in pins)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "p"\nversion = "0"\n\n[project.optional-dependencies]\ngpu = [{body}]\n'
    )
    return root


def test_trls_vllm_range_is_read_from_its_own_check():
    """TRL 1.16's import-time check (trl.import_utils.is_vllm_available) accepts 0.22.0-0.31.0."""
    from packaging.specifiers import SpecifierSet

    assert doctor.trl_vllm_range() == SpecifierSet(">=0.22.0,<=0.31.0")


@pytest.mark.parametrize("version, inside", [("0.32.0", False), ("0.30.0+cu129", True)])
def test_the_verdict_agrees_with_trls_own_check(version, inside, site, monkeypatch):
    """The same fake vLLM, judged by TRL itself (it warns outside its range) and by doctor."""
    import warnings

    from trl import import_utils

    fake_distribution(site, "vllm", version, ["torch>=2.0"])
    (site / "vllm").mkdir()
    (site / "vllm" / "__init__.py").write_text(f'__version__ = "{version}"\n')
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert import_utils.is_vllm_available()
    sys.modules.pop("vllm", None)
    warned = any("TRL currently supports vLLM" in str(w.message) for w in caught)
    assert warned is not inside
    findings = doctor.check_extras(site)
    assert [f.level for f in findings if f.check == "vllm"] == [
        doctor.OK if inside else doctor.FAIL
    ]


def test_a_vllm_outside_trls_range_is_a_blocker(site, tmp_path, monkeypatch, capsys):
    fake_distribution(site, "vllm", "0.32.0", ["torch==2.13.0"])
    root = gpu_extra(tmp_path / "pins", "vllm==0.30.0")
    (finding,) = [f for f in doctor.check_extras(root) if f.check == "vllm"]
    assert finding.level == doctor.FAIL
    assert "vllm 0.32.0: outside what trl 1.16.0 and TRL 1.16.0's vLLM check accept" in (
        finding.message
    )
    assert "<=0.31.0,>=0.22.0" in finding.message and finding.fix == 'pip install "vllm==0.30.0"'
    # and doctor as `make doctor` runs it, on a project
    monkeypatch.chdir(make_project(tmp_path / "project", recipe=CPU_RECIPE + MODEL))
    assert doctor.main(["--offline"]) == 1
    assert "vllm" in capsys.readouterr().err


def test_a_vllm_whose_own_requirements_the_stack_breaks(site, tmp_path):
    """vLLM 0.31 caps transformers below 5.18: upgrading vLLM alone breaks the stack."""
    fake_distribution(site, "vllm", "0.31.0", ["torch==2.13.0", "transformers<5.18,>=4.56"])
    (finding,) = doctor.check_extras(gpu_extra(tmp_path / "pins", "vllm==0.30.0"))
    assert finding.level == doctor.FAIL
    assert "it requires transformers<5.18,>=4.56" in finding.message


def test_a_vllm_inside_trls_range_but_off_the_pin_is_a_warning(site, tmp_path):
    fake_distribution(site, "vllm", "0.29.0", ["torch==2.13.0"])
    (finding,) = doctor.check_extras(gpu_extra(tmp_path / "pins", "vllm==0.30.0"))
    assert finding.level == doctor.WARN and "outside the project's pin ==0.30.0" in finding.message


def test_the_pinned_vllm_passes(site, tmp_path):
    fake_distribution(site, "vllm", "0.30.0", ["torch==2.13.0", "transformers>=4.56"])
    (finding,) = doctor.check_extras(gpu_extra(tmp_path / "pins", "vllm==0.30.0"))
    assert finding.level == doctor.OK and "the project's pin ==0.30.0" in finding.message


def test_deepspeed_below_trls_deepspeed_extra_is_a_blocker(site, tmp_path):
    """trl[deepspeed] requires deepspeed>=0.18.6 (TRL 1.16's metadata)."""
    fake_distribution(site, "deepspeed", "0.17.0")
    root = gpu_extra(tmp_path / "pins", "deepspeed>=0.18.6,<0.20")
    (finding,) = doctor.check_extras(root)
    assert finding.level == doctor.FAIL and ">=0.18.6" in finding.message


def test_a_bitsandbytes_unsloth_excludes_is_a_blocker(site, tmp_path):
    """unsloth 2026.10.9 requires bitsandbytes>=0.45.5,!=0.46.0,!=0.48.0 (its metadata)."""
    fake_distribution(site, "unsloth", "2026.10.9", ["bitsandbytes!=0.46.0,!=0.48.0,>=0.45.5"])
    fake_distribution(site, "bitsandbytes", "0.46.0")
    (finding,) = doctor.check_extras(gpu_extra(tmp_path / "pins", "bitsandbytes>=0.45,<0.51"))
    assert finding.level == doctor.FAIL and "unsloth 2026.10.9" in finding.message


def test_4bit_with_vllm_needs_the_bitsandbytes_plugin(site, tmp_path):
    """Since 0.28 vLLM loads bitsandbytes weights through the separate vllm-bnb-plugin."""
    fake_distribution(site, "vllm", "0.30.0")
    recipe = sample_recipe(
        make_project(
            tmp_path / "p", tier=GPU_24GB, recipe=GPU_RECIPE + VLLM + "load_in_4bit: true\n"
        )
    )
    found = by_check(doctor.check_optional_packages(recipe, cuda=True))
    assert found["vllm-bnb-plugin"].level == doctor.FAIL
    fake_distribution(site, "vllm-bnb-plugin", "0.1.0")
    assert "vllm-bnb-plugin" not in by_check(doctor.check_optional_packages(recipe, cuda=True))


# --- the fast kernels of a hybrid model: the project's [kernels] extra --------------------------

# The [kernels] extra the template writes for Qwen3.5 (gated DeltaNet: fla + causal-conv1d).
QWEN35_KERNELS = ("flash-linear-attention>=0.6,<0.7", "causal-conv1d>=1.7,<1.8")


def kernels_extra(root: Path, *pins: str) -> Path:
    """A pyproject.toml in `root` whose [kernels] extra pins `pins` (and a [gpu] extra)."""
    root.mkdir(parents=True, exist_ok=True)
    body = ", ".join(f'"{p}"' for p in pins)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "0"\n\n[project.optional-dependencies]\n'
        f'gpu = ["vllm==0.30.0"]\nkernels = [{body}]\n'
    )
    return root


def test_installed_kernels_are_named_with_their_versions(site, tmp_path):
    fake_distribution(site, "flash-linear-attention", "0.6.0")
    fake_distribution(site, "causal-conv1d", "1.7.0")
    (finding,) = doctor.check_kernels(kernels_extra(tmp_path, *QWEN35_KERNELS), gpu_run=True)
    assert finding.level == doctor.OK and finding.check == "kernels"
    assert finding.message == (
        "flash-linear-attention 0.6.0, causal-conv1d 1.7.0 installed: the model's "
        "linear-attention/convolution/Mamba layers use them"
    )


def test_missing_kernels_are_a_warning_with_the_install_line(site, tmp_path):
    """Without them transformers runs its PyTorch fallback: not a blocker (it is correct, and
    the plan's estimate counts its memory), but said before a run, with the install line."""
    import torch

    root = kernels_extra(tmp_path, *QWEN35_KERNELS)
    (finding,) = doctor.check_kernels(root, gpu_run=True)
    assert finding.level == doctor.WARN
    assert finding.message.startswith(
        "flash-linear-attention, causal-conv1d not installed: the model's "
        "linear-attention/convolution/Mamba layers run transformers' PyTorch fallback"
    )
    assert "the plan's memory estimate counts it" in finding.message
    assert finding.fix.startswith("pip install --no-build-isolation -e '.[kernels]' (a CUDA GPU")
    release = ".".join(torch.__version__.split(".")[:2])
    assert f"causal-conv1d compiles with nvcc when no prebuilt wheel matches torch {release}" in (
        finding.fix
    )
    # one of the two installed: the other is named, the installed one too
    fake_distribution(site, "flash-linear-attention", "0.6.0")
    (finding,) = doctor.check_kernels(root, gpu_run=True)
    assert finding.level == doctor.WARN
    assert finding.message.startswith(
        "causal-conv1d not installed (flash-linear-attention 0.6.0 installed)"
    )
    # a CPU run cannot use them anyway: information, not a warning
    assert doctor.check_kernels(root, gpu_run=False)[0].level == doctor.INFO


def test_a_kernel_outside_its_pin_is_a_warning(site, tmp_path):
    fake_distribution(site, "flash-linear-attention", "0.6.0")
    fake_distribution(site, "causal-conv1d", "1.6.0")
    (finding,) = doctor.check_kernels(kernels_extra(tmp_path, *QWEN35_KERNELS), gpu_run=True)
    assert finding.level == doctor.WARN
    assert "causal-conv1d 1.6.0 (pin <1.8,>=1.7)" in finding.message
    assert "flash-linear-attention" not in finding.message


def test_no_kernels_row_without_the_extra(site, tmp_path):
    """A model without hybrid layers: the project has no [kernels] extra, doctor no row."""
    assert doctor.check_kernels(gpu_extra(tmp_path / "pins", "vllm==0.30.0"), gpu_run=True) == []
    assert doctor.check_kernels(tmp_path / "nothing", gpu_run=True) == []


def test_doctor_shows_the_kernels_row_for_a_project_with_the_extra(no_gpu, tmp_path, monkeypatch):
    root = make_project(tmp_path, recipe=CPU_RECIPE + MODEL)
    pyproject = root / "pyproject.toml"
    body = ", ".join(f'"{p}"' for p in QWEN35_KERNELS)
    pyproject.write_text(
        pyproject.read_text() + f"\n[project.optional-dependencies]\nkernels = [{body}]\n"
    )
    monkeypatch.chdir(root)
    found = by_check(doctor.diagnose(["--offline"]))
    assert found["kernels"].level == doctor.INFO  # the cpu tier
    assert "causal-conv1d not installed" in found["kernels"].message


# --- sampling that biases vLLM's importance-sampling correction (issue 28) ----------------------


def test_sampling_that_biases_the_is_correction_is_a_warning_before_the_run(tmp_path):
    """top_p 0.9 with vLLM and its importance-sampling correction: vLLM's log-probs are those of
    the truncated distribution (huggingface/trl#6789). A warning with the fix, not a blocker."""
    biased = VLLM + "top_p: 0.9\nvllm_importance_sampling_correction: true\n"
    recipe = sample_recipe(make_project(tmp_path / "p", tier=GPU_24GB, recipe=GPU_RECIPE + biased))
    (finding,) = doctor.check_sampling(recipe)
    assert (finding.level, finding.check) == (doctor.WARN, "sampling")
    assert "top_p=0.9 (the recipe)" in finding.message and "trl#6789" in finding.message
    assert "Fix" not in finding.message and "\n" not in finding.message
    assert "top_p: 1.0" in finding.fix and "vllm_importance_sampling_correction: false" in (
        finding.fix
    )
    # the correction off, no vLLM, or neutral sampling: nothing to say
    others = (
        biased.replace("correction: true", "correction: false"),
        biased.replace("use_vllm: true", "use_vllm: false"),
        biased.replace("top_p: 0.9", "top_p: 1.0"),
    )
    for n, other in enumerate(others):
        root = make_project(tmp_path / f"other-{n}", tier=GPU_24GB, recipe=GPU_RECIPE + other)
        assert doctor.check_sampling(sample_recipe(root)) == [], other


def test_the_sampling_row_reaches_doctors_report(no_gpu, tmp_path, monkeypatch):
    biased = VLLM + "top_k: 20\nvllm_importance_sampling_correction: true\n"
    monkeypatch.chdir(make_project(tmp_path, recipe=CPU_RECIPE + MODEL + biased))
    found = doctor.diagnose(["--offline"])
    assert by_check(found)["sampling"].level == doctor.WARN
    assert not [f for f in found if f.level == doctor.FAIL], found


# --- gpu-check offline: the model from a folder or the cache, the sample data, no network -------


def hub_cache(root: Path, repo: str, files: dict[str, str]) -> Path:
    """A Hugging Face cache in `root` holding `files` of the model `repo` (huggingface_hub's
    layout: refs/main names the snapshot)."""
    folder = root / f"models--{repo.replace('/', '--')}"
    snapshot = folder / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text("abc123")
    for name, text in files.items():
        (snapshot / name).write_text(text)
    return snapshot


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """This machine's Hugging Face cache, empty, in tmp_path."""
    from huggingface_hub import constants

    folder = tmp_path / "hub-cache"
    folder.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(folder))
    return folder


def test_a_cached_model_counts_only_when_complete(cache):
    assert gpu_check.cached_model("org/absent") is None
    hub_cache(cache, "org/config-only", {"config.json": "{}"})
    assert gpu_check.cached_model("org/config-only") is None  # no weights: not usable offline
    snapshot = hub_cache(cache, "org/whole", {"config.json": "{}", "model.safetensors": "x"})
    assert gpu_check.cached_model("org/whole") == snapshot
    index = '{"weight_map": {"a": "model-1.safetensors", "b": "model-2.safetensors"}}'
    files = {"config.json": "{}", "model.safetensors.index.json": index,
             "model-1.safetensors": "x"}  # fmt: skip
    hub_cache(cache, "org/sharded", files)
    assert gpu_check.cached_model("org/sharded") is None  # a shard is missing
    assert gpu_check.cached_model("./not/a repo id") is None


def test_the_model_is_available_offline_from_the_cache(cache, monkeypatch):
    """Under HF_HUB_OFFLINE=1 a cached model used to count as unavailable."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub_cache(cache, "org/whole", {"config.json": "{}", "model.safetensors": "x"})
    assert gpu_check.model_available("org/whole")
    assert not gpu_check.model_available("org/elsewhere")
    source = gpu_check.model_source("org/whole")
    assert source[1] == "the Hugging Face cache (org/whole)" and Path(source[0]).is_dir()


def test_gpu_check_runs_offline_up_to_the_gpu(no_gpu, cache, tmp_path, monkeypatch, capsys):
    """On a CPU machine, offline, with the recipe's model in the cache: everything up to training
    resolves (the model from the cache, the sample data instead of the Hub dataset), then one
    line says the rest needs a CUDA GPU."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub_cache(cache, "org/gpu-model", {"config.json": "{}", "model.safetensors": "x"})
    recipe = GPU_RECIPE.replace(MODEL, "model_name_or_path: org/gpu-model\n").replace(
        "dataset_name: data/sample_math.jsonl\n", ""
    )  # the recipe names the task's default data, on the Hub
    monkeypatch.chdir(make_project(tmp_path / "p", tier=GPU_24GB, recipe=recipe))
    assert gpu_check.main([]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "the Hugging Face cache (org/gpu-model)" in err
    assert "the sample data (data/sample_math.jsonl)" in err
    assert "needs a CUDA GPU" in err and "24GB" in err


def test_gpu_check_takes_a_local_copy_of_the_model(
    no_gpu, tiny_model_dir, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(make_project(tmp_path / "p", tier=GPU_24GB, recipe=GPU_RECIPE))
    assert gpu_check.main(["--local-model", str(tiny_model_dir)]) == 2
    assert f"the local copy {tiny_model_dir}" in capsys.readouterr().err
    assert gpu_check.main(["--local-model", str(tmp_path)]) == 2  # no model there
    assert "no config.json there" in capsys.readouterr().err


def test_the_doctor_table_prints_bracketed_advice_as_written(capsys):
    """rich reads `[kernels]` as markup and drops it: findings are data and are escaped, so the
    advice can be copied as printed (issue 41)."""
    findings = [
        doctor.Check(
            doctor.WARN, "kernels [x]", "the [bold]extra[/bold] is missing", doctor.KERNELS_INSTALL
        )
    ]
    doctor.show(findings, title="doctor [cpu]")
    out = " ".join(capsys.readouterr().out.split())
    assert "pip install --no-build-isolation -e '.[kernels]'" in out
    assert "kernels [x]" in out and "[bold]extra[/bold]" in out and "doctor [cpu]" in out


# --- a judge server on the training node (issue 42: the memory plan counts it there) --------

GIB = 1024**3


def judge_recipe(projects, url: str, peak_gib: float):
    """The judge starter's recipe, its judge at `url`, on a GPU tier planned at `peak_gib`."""
    import dataclasses

    recipe = sample_recipe(projects("judge"))
    tier = dataclasses.replace(recipe.project.tier, estimated_peak_gib=peak_gib)
    project = dataclasses.replace(recipe.project, tier=tier)
    task = dataclasses.replace(recipe.task, judge_base_url=url)
    return recipe._replace(project=project, task=task)


@pytest.mark.parametrize(
    ("url", "here"),
    [("http://localhost:8000/v1", True), ("http://127.0.0.2:9000/v1", True),
     ("http://[::1]:8000/v1", True), ("https://judge.example.com/v1", False)],
)  # fmt: skip
def test_a_judge_url_on_this_machine_is_told_from_a_remote_one(url, here):
    from grpo_kit.rewards.judge import on_this_machine

    assert on_this_machine(url) is here


def test_the_machines_own_name_is_this_machine():
    import socket

    from grpo_kit.rewards.judge import on_this_machine

    assert on_this_machine(f"http://{socket.gethostname()}:8000/v1")


def test_the_share_a_colocated_judge_may_take_leaves_the_plan_and_its_margin():
    from grpo_kit.rewards.judge import COLOCATED_MARGIN, colocated_share

    share = colocated_share(80.0, 30.0)
    assert share == 0.58  # (80 - 33) / 80 = 0.5875, rounded down
    assert 80.0 * (1 - share) >= 30.0 * (1 + COLOCATED_MARGIN)
    assert colocated_share(24.0, 22.0) == 0.0  # nothing left beside the plan
    assert colocated_share(0.0, 1.0) == 0.0


def test_a_judge_holding_a_training_gpus_memory_fails_with_the_share_that_fits(projects):
    recipe = judge_recipe(projects, "http://localhost:8000/v1", peak_gib=30.0)
    # vllm serve's default --gpu-memory-utilization 0.9 took the card: 8 GiB of 80 are free
    (found,) = doctor.check_judge_placement(recipe, True, lambda: [(8 * GIB, 80 * GIB)])
    assert found.level == doctor.FAIL and found.check == "judge"
    assert "GPU 0 has 8.0 GiB free of 80.0 GiB" in found.message
    assert "the memory plan needs 30.0 GiB per GPU" in found.message
    assert "--gpu-memory-utilization 0.58" in found.fix and "CUDA_VISIBLE_DEVICES" in found.fix
    (tight,) = doctor.check_judge_placement(recipe, True, lambda: [(60 * GIB, 80 * GIB),
                                                           (20 * GIB, 24 * GIB)])  # fmt: skip
    assert tight.level == doctor.FAIL and "GPU 1" in tight.message


def test_a_judge_that_leaves_the_plan_room_or_runs_elsewhere_passes(projects):
    here = judge_recipe(projects, "http://localhost:8000/v1", peak_gib=30.0)
    (roomy,) = doctor.check_judge_placement(here, True, lambda: [(45 * GIB, 80 * GIB)])
    assert roomy.level == doctor.OK and "the plan needs 30.0 GiB" in roomy.message
    (cpu,) = doctor.check_judge_placement(here, False, lambda: [])
    assert cpu.level == doctor.OK and "training uses no GPU" in cpu.message
    away = judge_recipe(projects, "https://judge.example.com/v1", peak_gib=30.0)
    (remote,) = doctor.check_judge_placement(away, True, lambda: [(1 * GIB, 80 * GIB)])
    assert remote.level == doctor.OK and "elsewhere" in remote.message


def test_a_task_without_a_judge_has_no_judge_check(recipe):
    assert doctor.check_judge_placement(recipe, True, lambda: [(1 * GIB, 80 * GIB)]) == []


def test_offline_reaches_the_libraries_already_imported(monkeypatch):
    """`grpo doctor --offline` set HF_HUB_OFFLINE after the stack was imported, which the
    libraries had read already: loading the tokenizer still spent ~45 s on Hub retries (issue
    41's walk). Their flags are set too."""
    import datasets.config
    import huggingface_hub.constants
    from transformers.utils.hub import is_offline_mode  # what its downloads ask

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert not is_offline_mode()
    doctor.hub_offline()
    assert is_offline_mode() and datasets.config.HF_HUB_OFFLINE
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # restored by monkeypatch when the test ends
