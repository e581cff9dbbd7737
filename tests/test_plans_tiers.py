"""The GPUs each tier names are ones the pinned torch runs its plan on (issue 27, finding 3).

torch 2.13's Linux wheels are CUDA 13 builds (their nvidia-*-cu13 requirements), compiled for
compute capability 7.5 and newer: CUDA 13 dropped Volta, so a V100 (7.0) cannot run them, yet the
16GB tier named it. bf16 tiers need Ampere (8.0) or newer.
"""

from __future__ import annotations

import re

import pytest

from grpo_template import tiers

# Compute capability per GPU, from NVIDIA's table (developer.nvidia.com/cuda-gpus).
COMPUTE_CAPABILITY = {
    "V100": (7, 0), "T4": (7, 5), "Quadro RTX 5000": (7, 5), "A10G": (8, 6), "L4": (8, 9),
    "RTX 3090": (8, 6), "RTX 4090": (8, 9), "L40S": (8, 9), "RTX A6000": (8, 6),
    "A6000": (8, 6), "A100": (8, 0), "H100": (9, 0), "H200": (9, 0),
}  # fmt: skip


def named_gpus(tier: tiers.Tier) -> set[str]:
    text = f"{tier.label} {tier.examples}".replace("RTX 3090/4090", "RTX 3090, RTX 4090")
    return {gpu for gpu in COMPUTE_CAPABILITY if re.search(rf"\b{re.escape(gpu)}\b", text)}


@pytest.mark.parametrize("tier", [t for t in tiers.TIERS.values() if t.is_gpu], ids=str)
def test_every_gpu_a_tier_names_runs_its_plan(tier):
    gpus = named_gpus(tier)
    assert gpus, f"{tier.name}: names no GPU this test knows ({tier.label}; {tier.examples})"
    for gpu in gpus:
        assert COMPUTE_CAPABILITY[gpu] >= tiers.TORCH_MIN_COMPUTE_CAPABILITY, (tier.name, gpu)
        assert COMPUTE_CAPABILITY[gpu] >= tier.min_compute_capability, (tier.name, gpu)


def test_the_16gb_tier_no_longer_names_the_v100():
    sixteen = tiers.TIERS["16GB"]
    assert "V100" not in sixteen.label + sixteen.examples
    assert sixteen.min_compute_capability == (7, 5) and not sixteen.bf16
    assert tiers.TIERS["cpu"].min_compute_capability is None
