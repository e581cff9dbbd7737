# grpo-template: `make help` lists the targets.
PYTHON ?= python
ARGS ?=

.DEFAULT_GOAL := help
.PHONY: help install-test test test-fast demo lint questions

help: ## List the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-12s %s\n", $$1, $$2}'

install-test: ## Install what the tests need (torch's CPU-capable 2.13.0 first)
	$(PYTHON) -m pip install "torch==2.13.0"
	$(PYTHON) -m pip install -r requirements-test.txt

test: install-test ## Install, then run every test (bakes projects and runs their suites; about 25 min on 2 cores)
	$(PYTHON) -m pytest $(ARGS)

test-fast: ## Run the tests not marked slow (no installs)
	$(PYTHON) -m pytest -m "not slow" $(ARGS)

demo: ## Generate the default project into build/demo, install it, run its offline smoke pipeline
	$(PYTHON) -m pip install "cookiecutter>=2.7,<2.8"
	$(PYTHON) -m cookiecutter . --no-input --overwrite-if-exists -o build/demo
	$(MAKE) -C build/demo/my-grpo-project install smoke PYTHON=$(PYTHON)

lint: ## ruff on the template's own Python
	$(PYTHON) -m ruff check grpo_template tests benchmarks
	$(PYTHON) -m ruff format --check grpo_template tests benchmarks

questions: ## Regenerate cookiecutter.json from the catalog, tiers and tasks
	$(PYTHON) -m grpo_template.questions --write
