"""{{ cookiecutter.project_name }}: GRPO fine-tuning with grpo-kit (see README.md).

Yours: `task.py` (how a data row becomes a prompt; the rewards and their weights), `rewards.py`
(the reward functions), and the scripts `train.py`, `merge.py` and `infer.py`. The recipe is in
configs/, the sample data in data/.
"""
