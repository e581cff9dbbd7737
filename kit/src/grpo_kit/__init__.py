"""grpo-kit: the mechanism behind grpo-template projects.

A generated project owns its policy: the recipe (`configs/`), its data, its task (`task.py`: how
a row becomes a prompt, its rewards and weights) and its rewards (`rewards.py`); `grpo eject`
gives it its own train, merge or infer script when it wants one. The modules a project may
import are listed once, in `api.PUBLIC_MODULES`. This package owns the mechanism they run on: the
typed recipe and its layers (`recipe`), data loading and checks (`rows`, `data`), the backends
(`backends`), the reward contract and verifiers (`rewards`, `verify`), the code sandbox
(`sandbox`), the agents' environments (`environments`), the training callbacks (`callbacks`),
the offline tiny model (`offline`) and the commands behind `grpo` (`commands`, `cli`).

Importing this package (or `task`, `rewards`, `recipe`) loads no ML library: with the Unsloth
backend, `import unsloth` must come before trl and transformers, which `cli` and `training`
arrange. The starting points a project is generated from (tasks, rewards, sample data) and the
scripts `grpo eject` copies are in `starters/`.
"""

__version__ = "0.3.0"
