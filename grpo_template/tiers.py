"""Hardware tiers: the answers to "GPU tier" and what each one means for tuning.

The GPUs a tier names are ones the pinned torch runs on: torch 2.13's Linux wheels are CUDA 13
builds (nvidia-*-cu13 requirements), which need a recent NVIDIA driver (grpo_kit's doctor holds
the minimum, `MIN_DRIVER`, and checks it) and compile for compute
capability 7.5 (Turing) and newer; CUDA 13 dropped Volta (sm_70), so the V100 is no tier's
example. bf16 (and FlashAttention 2) needs compute capability 8.0 (Ampere) or newer.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

GIB = 1024**3
TORCH_MIN_COMPUTE_CAPABILITY = (7, 5)  # torch 2.13's CUDA 13 wheels: Turing and newer
BF16_COMPUTE_CAPABILITY = (8, 0)  # Ampere: bf16 and FlashAttention 2


@dataclass(frozen=True)
class Tier:
    name: str  # the answer value
    label: str  # shown in the prompt
    memory_gib: float  # memory per device usable for training (GPU memory, or RAM for cpu)
    gpus_per_node: int  # 0 for cpu
    nodes: int
    bf16: bool  # bf16 (and FlashAttention 2) support; False means fp16 on GPU, fp32 on CPU
    examples: str
    vllm: str | None = None  # how the Transformers backend generates: None, colocate or server
    scalable: bool = False  # GPUs per node (and nodes) come from the answers

    @property
    def min_compute_capability(self) -> tuple[int, int] | None:
        """The oldest GPU generation the tier's plan runs on (None: no GPU)."""
        if not self.is_gpu:
            return None
        return BF16_COMPUTE_CAPABILITY if self.bf16 else TORCH_MIN_COMPUTE_CAPABILITY

    @property
    def is_gpu(self) -> bool:
        return self.gpus_per_node > 0

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def memory_bytes(self) -> float:
        return self.memory_gib * GIB

    def scaled(self, gpus_per_node: int, nodes: int) -> Tier:
        """The tier for the answered machine size (only scalable tiers change)."""
        if not self.scalable:
            return self
        nodes = nodes if self.name == "multi-node" else 1
        return dataclasses.replace(self, gpus_per_node=gpus_per_node, nodes=nodes)


# memory_gib is what torch reports as total on the card (a "16 GB" T4 shows 14.6 GiB), so
# estimates are compared with what an allocation can actually get.
TIERS: dict[str, Tier] = {
    t.name: t
    for t in [
        Tier("cpu", "CPU only (development and smoke runs)", 16.0, 0, 1, False, "any machine"),
        Tier("16GB", "16 GB GPU (T4: fp16, no bf16/FlashAttention 2)", 14.6, 1, 1, False,
             "T4, Quadro RTX 5000"),
        Tier("24GB", "24 GB GPU (L4, A10G, RTX 4090)", 22.0, 1, 1, True, "L4, A10G, RTX 3090/4090",
             vllm="colocate"),
        Tier("48GB", "48 GB GPU (L40S, A6000)", 44.4, 1, 1, True, "L40S, RTX A6000",
             vllm="colocate"),
        Tier("80GB", "80 GB GPU (A100-80GB, H100)", 79.1, 1, 1, True, "A100-80GB, H100",
             vllm="colocate"),
        Tier("141GB", "141 GB GPU (H200)", 139.8, 1, 1, True, "H200", vllm="colocate"),
        Tier("multi-gpu", "Multi-GPU node: N x 80 GB (N asked next)", 79.1, 8, 1, True,
             "8x A100-80GB / H100", vllm="server", scalable=True),
        Tier("multi-node", "Multi-node: nodes x GPUs x 80 GB (asked next)", 79.1, 8, 2, True,
             "SLURM cluster of 8x H100 nodes", vllm="colocate", scalable=True),
    ]
}  # fmt: skip

DEFAULT_TIER = "24GB"
MAX_GPUS_PER_NODE = 16
MAX_NODES = 512


def lookup(name: str) -> Tier:
    return TIERS[name]
