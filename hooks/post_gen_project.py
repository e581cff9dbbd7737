"""Finish the project: prune the files of options not chosen, copy in grpo-kit's starters (the
task, rewards, scripts and sample data), record the answers, say what next."""

import json
import sys
from pathlib import Path

ANSWERS = json.loads(r'''{{ cookiecutter | tojson }}''')
TEMPLATE_ROOT = {{ grpo_template_root() | tojson }}

sys.path.insert(0, TEMPLATE_ROOT)
from grpo_template.answers import Answers  # noqa: E402
from grpo_template.layout import prune  # noqa: E402
from grpo_template.replay import replay_record  # noqa: E402

project = Path.cwd()
answers = Answers.from_context(ANSWERS)
prune(project, answers)
(project / ".cookiecutter.json").write_text(
    json.dumps(replay_record(ANSWERS), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
)
print(
    f"""
Created {project}

Next:
  cd {project.name}
  make install     # torch, grpo-kit, then the project ({answers.backend} backend)
  make smoke       # offline: tiny model, train -> merge -> infer, on the CPU
  make train       # the real run: configs/grpo.yaml (yours to change: configs/local.yaml)
"""
)
