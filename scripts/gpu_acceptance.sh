#!/usr/bin/env bash
# GPU acceptance: the catalog's exact model shapes with random weights, 2 training steps each by a
# generated project's own train under its tier's memory cap, one table of peak vs estimate
# (scripts/gpu_acceptance.py has the cases and the details). Needs a CUDA GPU, no network.
#
#   WHEELS=/path/to/wheels scripts/gpu_acceptance.sh [--budget 480] [--only "24GB LoRA" ...]
#
# WHEELS (optional): a folder of wheels (torch, vLLM, bitsandbytes, cookiecutter, grpo-kit and
# their requirements), installed first from that folder alone (pip --no-index). Without it the
# current environment must have them. The table goes to outputs/gpu-acceptance/acceptance.md;
# the exit code is 0 only when every case passes.
set -euo pipefail
python=${PYTHON:-python}
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${WHEELS:-}" ]; then
  "$python" -m pip install --no-index --find-links "$WHEELS" "$WHEELS"/*.whl
fi
"$python" - <<'PY'
import torch, sys
if not torch.cuda.is_available():
    sys.exit(f"gpu_acceptance: needs a CUDA GPU (torch {torch.__version__}, CUDA build "
             f"{torch.version.cuda}); `grpo doctor` says why there is none")
PY
export HF_HUB_OFFLINE=1
exec "$python" "$root/scripts/gpu_acceptance.py" "$@"
