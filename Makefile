# grpo-template: `make help` lists the targets.
PYTHON ?= python
ARGS ?=# extra pytest arguments for the template's suite
KIT_ARGS ?=# extra pytest arguments for grpo-kit's suite

.DEFAULT_GOAL := help
.PHONY: help install-test test test-kit test-template test-fast demo lint questions release-check release-record release-tag

help: ## List the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "} {n[NR] = $$1; d[NR] = $$2; if (length($$1) > w) w = length($$1)} END {for (i = 1; i <= NR; i++) printf "  %-" w "s  %s\n", n[i], d[i]}'

TORCH := torch==2.13.0
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu

install-test: ## Install what the tests need: torch 2.13.0's CPU build first, the test tools, grpo-kit from kit/ (editable), bubblewrap as root
	$(PYTHON) -m pip install --retries 1 --timeout 15 --index-url $(TORCH_CPU_INDEX) "$(TORCH)" \
	  || $(PYTHON) -m pip install "$(TORCH)"
	$(PYTHON) -m pip install -r requirements-test.txt
	$(PYTHON) -m pip install -e "./kit[tools,procedural,judge]"
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq \
	  && apt-get install -y -qq --no-install-recommends bubblewrap; } \
	  || echo "install-test: no bubblewrap (apt-get install bubblewrap as root): the code sandbox uses unshare"

test: install-test ## Install, then run every test: grpo-kit's suite and the template's, side by side
	@echo "test: grpo-kit's suite and the template's run side by side; each prints its report when it ends"
	$(MAKE) -j2 --output-sync=target test-kit test-template

test-kit: ## grpo-kit's own suite (no bake; no installs)
	cd kit && $(PYTHON) -m pytest -n auto --dist worksteal $(KIT_ARGS)

test-template: ## The template's suite: generation, the bake matrix, baked projects' own tests (no installs)
	$(PYTHON) -m pytest $(ARGS)

test-fast: ## Both suites without the tests marked slow (no installs)
	cd kit && $(PYTHON) -m pytest -n auto -m "not slow" $(KIT_ARGS)
	$(PYTHON) -m pytest -m "not slow" $(ARGS)

demo: ## Generate the default project into build/demo, install it, run its offline smoke pipeline
	$(PYTHON) -m pip install "cookiecutter>=2.7,<2.8"
	$(PYTHON) -m cookiecutter . --no-input --overwrite-if-exists -o build/demo
	$(MAKE) -C build/demo/my-grpo-project install smoke PYTHON=$(PYTHON)

lint: ## ruff on the template's own Python and on grpo-kit's
	$(PYTHON) -m ruff check grpo_template tests benchmarks
	$(PYTHON) -m ruff format --check grpo_template tests benchmarks
	cd kit && $(PYTHON) -m ruff check . && $(PYTHON) -m ruff format --check .

questions: ## Regenerate cookiecutter.json from the catalog, tiers and tasks
	$(PYTHON) -m grpo_template.questions --write

release-check: ## Is kit/src the kit its version recorded in kit/releases.json? (the CI check; RELEASING.md)
	$(PYTHON) -m grpo_template.release check

release-record: ## Record __version__'s kit (kit/src's hash) in kit/releases.json; a tagged version's kit never changes
	$(PYTHON) -m grpo_template.release record

release-tag: ## Tag HEAD v<version> when kit/src is the recorded kit and committed (then: git push origin main v<version>)
	$(PYTHON) -m grpo_template.release tag
