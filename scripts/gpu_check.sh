#!/usr/bin/env bash
# GPU check of a backend's real path, for a machine with a CUDA GPU and the backend's stack
# (plus vLLM and bitsandbytes) installed; the CPU test suite cannot reach these paths.
#
#   scripts/gpu_check.sh unsloth        # UnslothGRPOTrainer, fast_inference (vLLM), 4-bit load
#   scripts/gpu_check.sh transformers   # GRPOTrainer with colocated vLLM, 4-bit load
#
# MODEL (default: the project's tiny offline model, built here) can name a local folder or a Hub
# id. It bakes the backend's 24GB project, trains 3 steps under the tier's memory cap
# (`gpu_check`) and fails unless the report shows the expected trainer, vLLM and 4-bit load.
set -euo pipefail
backend=${1:?usage: scripts/gpu_check.sh transformers|unsloth}
python=${PYTHON:-python}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
"$python" -m cookiecutter "$root" --no-input -o "$work" backend="$backend" gpu_tier=24GB
cd "$work/my-grpo-project"
export PYTHONPATH=src HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}
if [ -z "${MODEL:-}" ]; then
  MODEL=outputs/tiny-model
  "$python" -m my_grpo_project.tools.tiny_model "$MODEL"
fi
case "$backend" in
  unsloth) extra=(--fast_inference true) trainer=UnslothGRPOTrainer ;;
  transformers) extra=(--use_vllm true --vllm_mode colocate) trainer=GRPOTrainer ;;
  *) echo "unknown backend '$backend': transformers or unsloth" >&2; exit 2 ;;
esac
"$python" -m my_grpo_project.tools.gpu_check --report gpu-check.json \
  --model_name_or_path "$MODEL" --load_in_4bit true "${extra[@]}"
"$python" - "$trainer" <<'PY'
import json, sys
report = json.load(open("gpu-check.json"))
expected = {"trainer": sys.argv[1], "use_vllm": True, "load_in_4bit": True, "steps": 3}
wrong = {k: report.get(k) for k, v in expected.items() if report.get(k) != v}
print("gpu check:", "passed" if not wrong else f"FAILED, expected {expected}, got {wrong}")
sys.exit(1 if wrong else 0)
PY
