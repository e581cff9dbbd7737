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
    assert figures["torch_peak_reserved_gib"] <= figures["budget_gib"]
