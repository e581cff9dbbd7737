"""Where a GRPO step's time goes (benchmark only, never the kit): TRL times its own phases with
`trl.extras.profiling` (generation, log-probs, rewards, loss) but reports them only to wandb,
mlflow or trackio. `install()` records them in this process instead, adds the backward pass
(accelerate's `Accelerator.backward`), and writes them as JSON at exit to `$GRPO_BENCH_PROFILE`.

    python -c "import step_profile; step_profile.install(); ..."   # then train as usual

`phases(events, steps)` turns the records into seconds per optimizer step by phase.
"""

from __future__ import annotations

import atexit
import json
import os
import time
from pathlib import Path

ENV = "GRPO_BENCH_PROFILE"  # where install() writes the records


def install() -> None:
    import torch
    from accelerate import Accelerator
    from trl.extras import profiling

    events: list[list] = []  # [name, grad enabled, seconds]
    original = profiling.ProfilingContext._log_metrics

    def record(self, duration: float) -> None:
        events.append([self.name, torch.is_grad_enabled(), duration])
        original(self, duration)

    backward = Accelerator.backward

    def timed_backward(self, loss, **kwargs):
        start = time.perf_counter()
        try:
            return backward(self, loss, **kwargs)
        finally:
            events.append(["backward", True, time.perf_counter() - start])

    profiling.ProfilingContext._log_metrics = record
    Accelerator.backward = timed_backward
    path = os.environ.get(ENV)
    if path:
        atexit.register(lambda: Path(path).write_text(json.dumps(events)))


def phases(events: list, steps: int, step_seconds: float) -> dict[str, float]:
    """Seconds per optimizer step: generation, the no-grad log-probs (old policy / reference),
    the rewards, the rest of TRL's batch preparation, the loss's forward (log-probs with grad),
    the backward pass, and the rest of TRL's `step_time` (its training_step: batch preparation,
    loss, backward; the optimizer step is outside it)."""

    def total(match) -> float:
        return sum(seconds for name, grad, seconds in events if match(name, grad))

    generate = total(lambda n, g: n.endswith(("transformers.generate", "generate_batch")))
    no_grad = total(lambda n, g: n.endswith("_get_per_token_logps_and_entropies") and not g)
    rewards = total(lambda n, g: n.endswith("_calculate_rewards"))
    prepare = total(lambda n, g: n.endswith("._prepare_inputs"))
    loss = total(lambda n, g: n.endswith(".compute_loss"))
    backward = total(lambda n, g: n == "backward")
    per_step = {
        "generation": generate,
        "old/ref log-probs (no grad)": no_grad,
        "rewards": rewards,
        "rest of batch preparation": prepare - generate - no_grad - rewards,
        "loss forward (log-probs with grad)": loss,
        "backward": backward,
    }
    per_step = {name: seconds / max(steps, 1) for name, seconds in per_step.items()}
    per_step["other (TRL's step_time excludes the optimizer step)"] = step_seconds - sum(
        per_step.values()
    )
    return per_step
