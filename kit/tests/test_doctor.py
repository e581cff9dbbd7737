"""doctor: it must tell the truth about the GPU against the project's tier ([tool.grpo.tier])
and exit as documented. torch.cuda is mocked, so every case runs on any machine."""

import re
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


def fake_gpus(monkeypatch, count: int, memory_gib: float, bf16: bool = True) -> None:
    """torch.cuda as it is on a machine with `count` GPUs of `memory_gib` each."""
    from types import SimpleNamespace

    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "Fake GPU")
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
