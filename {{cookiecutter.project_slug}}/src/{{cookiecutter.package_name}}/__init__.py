"""{{ cookiecutter.project_name }}: GRPO fine-tuning with grpo-kit (see README.md).

Yours: `task.py` (how a data row becomes a prompt; the rewards and their weights), `rewards.py`
(the reward functions). `grpo train`, `merge` and `infer` run grpo-kit's own flow; `grpo eject
train` (merge, infer) copies its script here for you to edit. The recipe is in configs/, the
sample data in data/.
"""
