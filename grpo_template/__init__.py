"""The template's knowledge, as plain tested Python: model catalog, tiers, tasks, memory model,
tuning, recipe rendering, dependency pins and answer validation. Cookiecutter reaches it through
the Jinja extension in `jinja.py` and the hooks. The generated project does not import it; it
installs grpo-kit (`kit/`), whose defaults this package reads (`kit.py`)."""
