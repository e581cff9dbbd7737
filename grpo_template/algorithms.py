"""GRPO algorithm presets: every GRPOConfig field an algorithm implies, written explicitly.

TRL 1.16 and Unsloth 2026.10 (its patched TRL 1.15 config) fill unset algorithm fields
differently: TRL corrects vLLM's logprob mismatch by default (`sequence_mask`), Unsloth turns
that off; under `dapo` Unsloth sets `mask_truncated_completions` and `epsilon_high=0.28`, under
`dr_grpo` it turns reward scaling off (unsloth/models/rl.py, 2026.10.9). A recipe that leaves
them unset therefore trains a different algorithm on each backend. Each preset here sets every
one of them, so the recipe is the algorithm, on both backends (tests/test_unsloth_backend.py
checks the configuration each backend's trainer resolves, field by field).

Knowledge used (TRL 1.16 `trl/trainer/grpo_config.py` and `grpo_trainer.py`, TRL's paper index):
- Clipping (`epsilon`, `epsilon_high`) and GSPO's sequence ratio only act when a generation
  batch is reused (`num_iterations > 1`, or `steps_per_generation > gradient_accumulation_steps`);
  on-policy the ratio is 1. The loss normalisation, reward scaling and masking always act.
- vLLM importance-sampling correction: TRL 1.16's `sequence_*` modes multiply the per-token log
  ratios over the whole completion (a sum, huggingface/trl#5814), so a small systematic
  vLLM/trainer gap shrinks long completions' weight towards 0 and masks them. The presets use
  truncated per-token IS (TIS, `token_truncate`, cap 2), which cannot compound.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT = "dapo"
TIS_BLOG = "fengyao.notion.site/off-policy-rl"


@dataclass(frozen=True)
class Setting:
    """One GRPOConfig field of a preset: its value and the one-line comment the recipe shows."""

    value: object
    why: str


@dataclass(frozen=True)
class Algorithm:
    name: str
    paper: str  # short name of the paper
    arxiv: str  # its arXiv id
    label: str  # the choice's text in the generation prompt
    changes: str  # README: what it changes against GRPO
    pick_when: str  # README: when to pick it
    settings: tuple[tuple[str, Setting], ...]

    def values(self) -> dict[str, object]:
        return {key: setting.value for key, setting in self.settings}


def _vllm_correction() -> list[tuple[str, Setting]]:
    """The same rollout correction for every preset (it fixes the engine, not the objective)."""
    return [
        (
            "vllm_importance_sampling_correction",
            Setting(True, f"vLLM rollouts: reweight by trainer/vLLM probability ({TIS_BLOG})"),
        ),
        (
            "vllm_importance_sampling_mode",
            Setting(
                "token_truncate",
                "per-token ratio capped (TIS): TRL's sequence_mask compounds over long answers",
            ),
        ),
        (
            "vllm_importance_sampling_clip_max",
            Setting(2.0, f"the TIS cap C ({TIS_BLOG})"),
        ),
    ]


def _preset(
    name: str,
    paper: str,
    arxiv: str,
    label: str,
    changes: str,
    pick_when: str,
    *,
    loss_type: Setting,
    epsilon: Setting,
    epsilon_high: Setting,
    importance_sampling_level: Setting | None = None,
    scale_rewards: Setting | None = None,
    multi_objective_aggregation: Setting | None = None,
    mask_truncated_completions: Setting | None = None,
    extra: tuple[tuple[str, Setting], ...] = (),
) -> Algorithm:
    """A preset: what the paper sets, and the shared defaults (stated, never left to a backend)
    for the rest."""
    grpo = "2402.03300"
    settings = [
        ("loss_type", loss_type),
        (
            "importance_sampling_level",
            importance_sampling_level
            or Setting("token", f"one ratio per token, as in GRPO (arXiv:{grpo})"),
        ),
        (
            "scale_rewards",
            scale_rewards
            or Setting("group", f"advantage / the group's reward std, as in GRPO (arXiv:{grpo})"),
        ),
        (
            "multi_objective_aggregation",
            multi_objective_aggregation
            or Setting(
                "sum_then_normalize",
                "weighted sum of the rewards, then the group statistics (GDPO: arXiv:2601.05242)",
            ),
        ),
        ("epsilon", epsilon),
        ("epsilon_high", epsilon_high),
        (
            "mask_truncated_completions",
            mask_truncated_completions
            or Setting(
                False,
                "cut-off answers keep their (soft_overlong-penalised) score; true drops them "
                "(DAPO's overlong filtering, arXiv:2503.14476)",
            ),
        ),
        (
            "top_entropy_quantile",
            Setting(1.0, "every token trains; 0.2: only high-entropy forks (arXiv:2506.01939)"),
        ),
        *extra,
        *_vllm_correction(),
    ]
    return Algorithm(name, paper, arxiv, label, changes, pick_when, tuple(settings))


def _clip(value: float, paper: str, arxiv: str, side: str) -> Setting:
    return Setting(
        value, f"{side} clip of the policy ratio ({paper}, arXiv:{arxiv}); acts off-policy only"
    )


ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (
        _preset(
            "dapo",
            "DAPO",
            "2503.14476",
            "DAPO: token-level loss, clip-higher (TRL's default loss)",
            "averages the loss over all tokens of the batch (no length bias); clip-higher "
            "(epsilon_high 0.28)",
            "the default: reasoning with long answers; TRL's own default loss",
            loss_type=Setting(
                "dapo", "loss / the batch's completion tokens: no length bias (arXiv:2503.14476)"
            ),
            epsilon=_clip(0.2, "DAPO", "2503.14476", "lower"),
            epsilon_high=_clip(0.28, "DAPO clip-higher", "2503.14476", "upper"),
        ),
        _preset(
            "grpo",
            "DeepSeekMath",
            "2402.03300",
            "GRPO: the original, per-sequence loss (DeepSeekMath)",
            "averages each completion's tokens first, then the completions (short answers weigh "
            "more per token)",
            "reproducing papers and baselines that use the original objective",
            loss_type=Setting(
                "grpo", "mean over each completion, then over completions (arXiv:2402.03300)"
            ),
            epsilon=_clip(0.2, "GRPO", "2402.03300", "lower"),
            epsilon_high=_clip(0.2, "GRPO", "2402.03300", "upper"),
        ),
        _preset(
            "dr_grpo",
            "Dr. GRPO",
            "2503.20783",
            "Dr. GRPO: no length or difficulty bias (constant normaliser, no std scaling)",
            "divides the loss by a constant (max_completion_length) and does not divide "
            "advantages by the group's std",
            "answers whose length should not change the update; prompts of mixed difficulty",
            loss_type=Setting(
                "dr_grpo", "loss / (completions x max_completion_length) (arXiv:2503.20783)"
            ),
            scale_rewards=Setting(
                "none", "no division by the group std: no difficulty bias (arXiv:2503.20783)"
            ),
            epsilon=_clip(0.2, "Dr. GRPO", "2503.20783", "lower"),
            epsilon_high=_clip(0.2, "Dr. GRPO", "2503.20783", "upper"),
        ),
        _preset(
            "gspo",
            "GSPO",
            "2507.18071",
            "GSPO: one sequence-level ratio per completion (Qwen3's RL)",
            "one importance ratio per completion (geometric mean over its tokens) with a tight "
            "clip",
            "MoE models, or batches reused off-policy (num_iterations > 1)",
            loss_type=Setting("grpo", "per-sequence mean, as in the paper (arXiv:2507.18071)"),
            importance_sampling_level=Setting(
                "sequence", "one ratio per completion: GSPO (arXiv:2507.18071)"
            ),
            epsilon=_clip(3e-4, "GSPO", "2507.18071", "lower"),
            epsilon_high=_clip(4e-4, "GSPO", "2507.18071", "upper"),
        ),
        _preset(
            "cispo",
            "MiniMax-M1 (CISPO)",
            "2506.13585",
            "CISPO: clipped importance weights, every token keeps a gradient (MiniMax-M1)",
            "clips the importance weight (at epsilon_high) instead of the update, so no token "
            "loses its gradient",
            "off-policy reuse where rare tokens matter (long reasoning forks); ScaleRL's loss",
            loss_type=Setting(
                "cispo", "clip the IS weight, keep every token's gradient (arXiv:2506.13585)"
            ),
            epsilon=Setting(0.2, "not used by cispo (its only cap is epsilon_high)"),
            epsilon_high=Setting(
                5.0, "the IS weight cap itself, not 1 + cap (ScaleRL, arXiv:2510.13786)"
            ),
        ),
        _preset(
            "sapo",
            "SAPO",
            "2511.20347",
            "SAPO: a soft, temperature-controlled trust region instead of clipping",
            "replaces the hard clip by a smooth gate (sapo_temperature_pos/neg)",
            "unstable runs, or off-policy reuse where hard clipping discards too much",
            loss_type=Setting("sapo", "soft gate instead of a hard clip (arXiv:2511.20347)"),
            epsilon=Setting(0.2, "not used by sapo (its gate replaces the clip)"),
            epsilon_high=Setting(0.2, "not used by sapo (its gate replaces the clip)"),
            extra=(
                (
                    "sapo_temperature_pos",
                    Setting(1.0, "gate temperature, positive advantages (arXiv:2511.20347)"),
                ),
                (
                    "sapo_temperature_neg",
                    Setting(1.05, "gate temperature, negative advantages (arXiv:2511.20347)"),
                ),
            ),
        ),
        _preset(
            "gdpo",
            "GDPO",
            "2601.05242",
            "GDPO: each reward normalised in its group before the sum (multi-reward)",
            "normalises each reward within its group before the weighted sum (DAPO's loss), so a "
            "format reward cannot drown correctness",
            "several rewards (correctness + format + length, as here) where one dominates",
            loss_type=Setting(
                "dapo", "DAPO's token-level loss; GDPO changes the advantages (arXiv:2601.05242)"
            ),
            multi_objective_aggregation=Setting(
                "normalize_then_sum",
                "each reward normalised in its group, then summed (arXiv:2601.05242)",
            ),
            scale_rewards=Setting(
                "group", "not used: normalize_then_sum scales per reward (arXiv:2601.05242)"
            ),
            epsilon=_clip(0.2, "DAPO", "2503.14476", "lower"),
            epsilon_high=_clip(0.28, "DAPO clip-higher", "2503.14476", "upper"),
        ),
    )
}

# Every algorithm writes these (sapo adds its temperatures).
FIELDS = tuple(key for key, _ in ALGORITHMS[DEFAULT].settings)
# What the parity test compares between the backends' resolved configurations: the written
# fields, every preset's extras, and the algorithm fields the recipe leaves at defaults that
# both backends share (beta is written in the training section; the rest are TRL's defaults).
PARITY_FIELDS = (
    *FIELDS,
    "sapo_temperature_pos",
    "sapo_temperature_neg",
    "beta",
    "delta",
    "num_iterations",
    "use_bias_correction_kl",
    "entropy_coef",
    "use_adaptive_entropy",
    "off_policy_mask_threshold",
    "vllm_importance_sampling_clip_min",
    "vllm_importance_sampling_cap",
    "vespo_k_pos",
    "vespo_k_neg",
    "vespo_lambda_pos",
    "vespo_lambda_neg",
)


def get(name: str) -> Algorithm:
    if name not in ALGORITHMS:
        raise KeyError(f"algorithm '{name}' is not offered; choose one of: {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]


def entries(name: str) -> list[tuple[str, object, str]]:
    """(key, value, comment) of the recipe's algorithm lines (recipe.py makes them Entries)."""
    return [(key, s.value, s.why) for key, s in get(name).settings]


def switch_lines(current: str, target: str) -> list[str]:
    """The `configs/local.yaml` lines that turn a recipe generated with `current` into `target`
    (every field whose value differs, and the fields only `target` sets)."""
    from .yaml_text import yaml_scalar

    have = get(current).values()
    return [
        f"{key}: {yaml_scalar(value)}"
        for key, value in get(target).values().items()
        if key not in have or have[key] != value
    ]


def readme_table(current: str) -> str:
    """The generated README's table: what each algorithm changes, when to pick it, and the
    configs/local.yaml lines that switch this project (generated with `current`) to it."""
    columns = ("`algorithm`", "paper", "what it changes", "pick it for", "to switch: local.yaml")
    lines = ["| " + " | ".join(columns) + " |", "| --- | --- | --- | --- | --- |"]
    for a in ALGORITHMS.values():
        default = " (default)" if a.name == DEFAULT else ""
        paper = f"{a.paper}, [arXiv:{a.arxiv}](https://arxiv.org/abs/{a.arxiv})"
        switch = (
            "this project's"
            if a.name == current
            else "<br>".join(f"`{line}`" for line in switch_lines(current, a.name))
        )
        lines.append(f"| `{a.name}`{default} | {paper} | {a.changes} | {a.pick_when} | {switch} |")
    return "\n".join(lines)
