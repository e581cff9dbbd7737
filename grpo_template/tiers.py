"""Hardware tiers: the answers to "GPU tier" and what each one means for tuning."""

from __future__ import annotations

from dataclasses import dataclass

GIB = 1024**3


@dataclass(frozen=True)
class Tier:
    name: str  # the answer value
    label: str  # shown in the prompt
    memory_gib: float  # memory per device usable for training (GPU memory, or RAM for cpu)
    gpus_per_node: int  # 0 for cpu
    nodes: int
    bf16: bool  # bf16 (and FlashAttention 2) support; False means fp16 on GPU, fp32 on CPU
    examples: str

    @property
    def is_gpu(self) -> bool:
        return self.gpus_per_node > 0

    @property
    def processes(self) -> int:
        """Training processes (one per GPU, or one on CPU)."""
        return max(1, self.gpus_per_node * self.nodes)

    @property
    def memory_bytes(self) -> float:
        return self.memory_gib * GIB


# memory_gib is what torch reports as total on the card (a "16 GB" T4 shows 14.6 GiB), so
# estimates are compared with what an allocation can actually get.
TIERS: dict[str, Tier] = {
    t.name: t
    for t in [
        Tier("cpu", "CPU only (development and smoke runs)", 16.0, 0, 1, False, "any machine"),
        Tier(
            "16GB",
            "16 GB GPU (T4, V100: fp16, no bf16/FlashAttention 2)",
            14.6,
            1,
            1,
            False,
            "T4, V100-16GB",
        ),
        Tier("24GB", "24 GB GPU (L4, A10G, RTX 4090)", 22.0, 1, 1, True, "L4, A10G, RTX 3090/4090"),
        Tier("48GB", "48 GB GPU (L40S, A6000)", 44.4, 1, 1, True, "L40S, RTX A6000"),
        Tier("80GB", "80 GB GPU (A100-80GB, H100)", 79.1, 1, 1, True, "A100-80GB, H100"),
        Tier("141GB", "141 GB GPU (H200)", 139.8, 1, 1, True, "H200"),
    ]
}

DEFAULT_TIER = "24GB"


def lookup(name: str) -> Tier:
    return TIERS[name]
