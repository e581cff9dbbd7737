"""Finish the project: prune the files of options not chosen, copy in grpo-kit's starters (the
task, rewards and sample data), record the answers (and, from a git repository, what
cruft needs to update the project), make the project a git repository with a first commit
(grpo_template.new_project), say what next; inside cruft's own temporary renders (`cruft
update`), only the files."""

import json
import sys
from pathlib import Path

ANSWERS = json.loads(r'''{{ cookiecutter | tojson }}''')
TEMPLATE_ROOT = {{ grpo_template_root() | tojson }}
# Rendered by cruft for its diff (`cruft update`): a temporary folder, no repository, no message.
CRUFT_DIFF_RENDER = {{ 'True' if grpo_cruft_diff_render() else 'False' }}

sys.path.insert(0, TEMPLATE_ROOT)
from grpo_template import kit  # noqa: E402
from grpo_template.answers import Answers  # noqa: E402
from grpo_template.layout import prune  # noqa: E402
from grpo_template.new_project import in_cruft_order, start_repository  # noqa: E402
from grpo_template.replay import cruft_record, made_by_cruft, replay_record  # noqa: E402


def write_json(path: Path, record: dict) -> None:
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


project = Path.cwd()
answers = Answers.from_context(ANSWERS)
prune(project, answers)
write_json(project / ".cookiecutter.json", replay_record(ANSWERS))
regenerate = "make update      # later: a newer template, or another task or tier (README)"
if not made_by_cruft(ANSWERS):  # under cruft, cruft writes .cruft.json itself
    # The folder cookiecutter read (a local template's path, a remote one's clone); the
    # template's own Python may have been imported from elsewhere (a grpo_template in the cwd).
    read = Path(ANSWERS.get("_repo_dir") or TEMPLATE_ROOT)
    read = read if read.is_absolute() else Path(TEMPLATE_ROOT)
    origin = kit.origin(ANSWERS.get("_template"), read)
    if origin is None:
        regenerate = (
            f"(no .cruft.json: {read} is not in a git repository; to update with cruft, "
            "run `cruft link <the template's git URL>` in the project)"
        )
    else:
        record = cruft_record(ANSWERS, origin.template, origin.commit, origin.directory)
        write_json(project / ".cruft.json", record)
if CRUFT_DIFF_RENDER:
    sys.exit(0)
if made_by_cruft(ANSWERS):  # `cruft create`: its record (cruft writes the same after this hook),
    origin = kit.origin(ANSWERS["_template"], Path(TEMPLATE_ROOT))  # in the first commit
    if origin is not None:
        directory = origin.directory
        record = cruft_record(ANSWERS, ANSWERS["_template"], ANSWERS["_commit"], directory)
        write_json(project / ".cruft.json", in_cruft_order(record, Path(TEMPLATE_ROOT)))
repository = start_repository(project)
print(
    f"""
Created {project}
{repository}

Next:
  cd {project.name}
  make install     # torch, then grpo-kit and the project ({answers.backend} backend)
  make smoke       # offline: tiny model, train -> merge -> infer, on the CPU
  make train       # the real run: configs/grpo.yaml (yours to change: configs/local.yaml)
  {regenerate}
"""
)
kit_warning = kit.warning(ANSWERS.get("_template"))
if kit_warning:  # loud: the project's own CI cannot install a kit from this machine's folder
    print(f"{'!' * 78}\n{kit_warning}\n{'!' * 78}\n")
