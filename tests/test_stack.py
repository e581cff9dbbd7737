"""The dependency pins: the test environment runs inside them, and the GPU extras resolve."""

import subprocess
import sys
from importlib import metadata

import pytest
from conftest import ROOT
from packaging.requirements import Requirement

from grpo_template import stack

TRACKERS = tuple(r for packages in stack.TRACKER_PACKAGES.values() for r in packages)


@pytest.mark.parametrize("requirement", stack.TRANSFORMERS_STACK + TRACKERS)
def test_installed_versions_are_inside_the_pins(requirement):
    parsed = Requirement(requirement)
    assert parsed.specifier.contains(metadata.version(parsed.name), prereleases=True)


def test_requirements_test_repeats_the_pins():
    lines = (ROOT / "requirements-test.txt").read_text(encoding="utf-8").splitlines()
    for requirement in stack.TRANSFORMERS_STACK[1:]:  # torch is installed first
        assert requirement in lines, requirement


def test_task_kit_extras_exist_and_requirements_test_pins_them_alike():
    """A task's kit extras (the project pins grpo-kit[<extra>]) are grpo-kit's optional
    dependencies, and requirements-test.txt (CI) pins their packages exactly as the kit does."""
    import tomllib

    from grpo_template import tasks

    kit = tomllib.loads((ROOT / "kit" / "pyproject.toml").read_text(encoding="utf-8"))
    optional = kit["project"]["optional-dependencies"]
    lines = (ROOT / "requirements-test.txt").read_text(encoding="utf-8").splitlines()
    wanted = {extra for task in tasks.TASKS.values() for extra in task.kit_extras}
    assert "procedural" in wanted
    for extra in wanted:
        assert optional.get(extra), extra
        for requirement in optional[extra]:
            assert requirement in lines, (extra, requirement)


def test_the_kits_ranges_hold_both_stacks():
    """grpo-kit's own requirements (ranges) admit each backend's exact pins, so a project's
    pyproject (grpo-kit==X plus the stack) always resolves."""
    import tomllib

    kit = tomllib.loads((ROOT / "kit" / "pyproject.toml").read_text(encoding="utf-8"))
    ranges = {Requirement(r).name: Requirement(r) for r in kit["project"]["dependencies"]}
    for pins in (stack.TRANSFORMERS_STACK, stack.UNSLOTH_STACK):
        for text in pins:
            pin = Requirement(text)
            if pin.name not in ranges:
                continue
            versions = [s.version for s in pin.specifier]
            assert any(ranges[pin.name].specifier.contains(v) for v in versions), (pin, ranges)


@pytest.mark.slow
def test_gpu_extras_resolve_with_the_stack(tmp_path):
    """pip resolves vLLM (with its bitsandbytes plugin), bitsandbytes, DeepSpeed and the wheel
    among the hybrid kernels (flash-linear-attention) together with the pinned stack (metadata
    only: nothing is installed). vLLM's own pins (torch, transformers) are what can clash.
    causal-conv1d and mamba-ssm are source distributions whose metadata needs torch to build."""
    report = tmp_path / "report.json"
    command = [
        sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
        "--report", str(report), *stack.TRANSFORMERS_STACK, stack.VLLM, stack.VLLM_BNB_PLUGIN,
        stack.BITSANDBYTES, stack.DEEPSPEED, stack.KERNEL_PINS["flash-linear-attention"],
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert report.is_file()
