"""The template's knowledge, as plain tested Python: model catalog, tiers, tasks, memory model,
tuning, recipe rendering, dependency pins and answer validation. Cookiecutter reaches it through
the Jinja extension in `jinja.py` and the hooks; the generated project does not import it."""
