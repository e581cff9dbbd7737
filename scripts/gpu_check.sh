#!/usr/bin/env bash
# GPU check of a backend's real path, for a machine with a CUDA GPU and the backend's stack and
# GPU extras installed (it installs nothing and needs no network); the CPU test suite cannot
# reach these paths.
#
#   scripts/gpu_check.sh unsloth        # UnslothGRPOTrainer on the 24GB project's recipe
#   scripts/gpu_check.sh transformers   # GRPOTrainer on the 24GB project's recipe
#
# It bakes the backend's 24GB project and runs `grpo gpu-check` (3 steps under the tier's memory
# cap) on the recipe as planned: vLLM and 4-bit weights only where the plan uses them. MODEL (a
# folder) is a local copy of the recipe's model (`--local-model`); without it gpu-check takes the
# model from the Hugging Face cache, else trains the tiny offline model (the GPU code path, not
# the estimate). It fails unless the report shows the backend's trainer, the planned vLLM and
# 4-bit settings and every step trained.
set -euo pipefail
backend=${1:?usage: scripts/gpu_check.sh transformers|unsloth}
case "$backend" in
  unsloth) trainer=UnslothGRPOTrainer ;;
  transformers) trainer=GRPOTrainer ;;
  *) echo "unknown backend '$backend': transformers or unsloth" >&2; exit 2 ;;
esac
python=${PYTHON:-python}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
"$python" -m cookiecutter "$root" --no-input -o "$work" backend="$backend" gpu_tier=24GB
cd "$work/my-grpo-project"
export PYTHONPATH=src HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}
local_model=()
if [ -n "${MODEL:-}" ]; then
  local_model=(--local-model "$MODEL")
fi
"$python" -m grpo_kit gpu-check --report gpu-check.json ${local_model[@]+"${local_model[@]}"}
"$python" - "$trainer" <<'PY'
import json, sys
from grpo_kit.recipe import parse_recipe
recipe = parse_recipe(["--config", "configs/grpo.yaml"], read_only=True)
vllm = recipe.training.use_vllm or bool(getattr(recipe.backend, "fast_inference", False))
report = json.load(open("gpu-check.json"))
expected = {"trainer": sys.argv[1], "use_vllm": vllm, "load_in_4bit": recipe.model.load_in_4bit,
            "steps": 3}
wrong = {k: report.get(k) for k, v in expected.items() if report.get(k) != v}
print("gpu check:", "passed" if not wrong else f"FAILED, expected {expected}, got {wrong}")
sys.exit(1 if wrong else 0)
PY
