# grpo-template: `make help` lists the targets.
PYTHON ?= python
ARGS ?=

.DEFAULT_GOAL := help
.PHONY: help install-test test test-fast demo lint questions

help: ## List the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "} {n[NR] = $$1; d[NR] = $$2; if (length($$1) > w) w = length($$1)} END {for (i = 1; i <= NR; i++) printf "  %-" w "s  %s\n", n[i], d[i]}'

TORCH := torch==2.13.0
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu

install-test: ## Install what the tests need (torch 2.13.0's CPU build first; PyPI if that index fails)
	$(PYTHON) -m pip install --retries 1 --timeout 15 --index-url $(TORCH_CPU_INDEX) "$(TORCH)" \
	  || $(PYTHON) -m pip install "$(TORCH)"
	$(PYTHON) -m pip install -r requirements-test.txt
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq \
	  && apt-get install -y -qq --no-install-recommends bubblewrap; } \
	  || echo "install-test: no bubblewrap (apt-get install bubblewrap as root): the code sandbox uses unshare"

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
