"""doctor on this machine: it must tell the truth about the GPU and exit as documented."""

import pytest

from {{ cookiecutter.package_name }} import project
from {{ cookiecutter.package_name }}.tools import doctor


def cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def test_doctor_reports_the_missing_gpu_truthfully(capsys):
    if cuda():
        pytest.skip("this machine has a GPU")
    code = doctor.main(["--offline"])
    out = capsys.readouterr().out
    if project.GPU_TIER == "cpu":
        assert code == 0 and "no GPU, and the recipe trains on the CPU" in out
    else:
        assert code == 1
        assert "no CUDA GPU found" in out and project.GPU_TIER in out


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


def test_gpu_check_needs_a_gpu(capsys):
    from {{ cookiecutter.package_name }}.tools import gpu_check

    if cuda():
        pytest.skip("this machine has a GPU: run `make gpu-check` instead")
    assert gpu_check.main([]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


@pytest.mark.gpu
def test_gpu_check_on_a_small_model_stays_under_the_tier_budget():
    if not cuda():
        pytest.skip("needs a CUDA GPU")
    from {{ cookiecutter.package_name }}.tools import gpu_check

    figures = gpu_check.gpu_check(["--steps", "2"])
    assert figures["torch_peak_reserved_gib"] <= figures["cap_gib"]


def test_gpu_check_scales_vllms_share_to_the_tier_cap():
    """vLLM's share is a fraction of the whole card: 0.3 of a 22 GiB tier on a 139.8 GiB H200
    is 6.6 GiB, not 41.9 GiB."""
    from {{ cookiecutter.package_name }}.tools import gpu_check

    share = gpu_check.scaled_share(0.3, cap_gib=22.0, card_gib=139.8)
    assert share * 139.8 == pytest.approx(0.3 * 22.0, rel=1e-3)
    assert gpu_check.scaled_share(0.3, cap_gib=22.0, card_gib=22.0) == 0.3


def test_gpu_check_verdict_and_what_makes_the_estimate_inapplicable():
    from {{ cookiecutter.package_name }}.tools import gpu_check

    assert gpu_check.verdict(20.0, 18.0) == "pass"
    assert gpu_check.verdict(25.0, 18.0) == "fail" and gpu_check.verdict(12.0, 18.0) == "fail"
    with pytest.raises(gpu_check.NotMeasured, match="no memory was measured"):
        gpu_check.verdict(0.0, 18.0)
    assert gpu_check.changed_fields(["--max_steps", "3", "--report_to=none"]) == []
    assert gpu_check.changed_fields(["--load_in_4bit", "true", "--lora_r=8"]) == [
        "load_in_4bit",
        "lora_r",
    ]


def test_every_install_hint_names_an_extra_that_exists():
    """A fix that says `pip install -e '.[x]'` must name an extra of pyproject.toml."""
    import re
    import tomllib
    from pathlib import Path

    import {{ cookiecutter.package_name }} as package

    project = tomllib.loads(Path("pyproject.toml").read_text())["project"]
    extras = set(project["optional-dependencies"])
    for path in Path(package.__file__).parent.rglob("*.py"):
        for named in re.findall(r"\.\[([a-z,]+)\]", path.read_text(encoding="utf-8")):
            assert set(named.split(",")) <= extras, f"{path}: .[{named}]"


def test_doctor_reports_the_reward_settings_and_the_sandbox_in_use(recipe):
    from {{ cookiecutter.package_name }}.tasks import TASK

    findings = doctor.check_reward_settings(recipe)
    assert all(f.level != doctor.FAIL for f in findings), findings
    if TASK.name == "code":  # the isolation level the rewards run with, in one line
        (sandbox,) = [f for f in findings if f.check == "sandbox"]
        assert "isolation" in sandbox.message
