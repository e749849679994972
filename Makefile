# Set-up and everyday commands. `make demo` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

NPM_TOOLS := .npm-tools
# Real MCP clients for the end-to-end tests, pinned; installed from the npm registry.
NPM_PACKAGES := @modelcontextprotocol/inspector@2.12.0 @anthropic-ai/claude-code@2.1.330

.PHONY: install npm-tools browser demo test quick lint bench docs dist clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP) ## Create .venv and install Lore with its test tools

demo: $(STAMP) ## Seed a temporary home with demo lessons and show what recall finds
	$(BIN)/lore demo

npm-tools: ## Install the MCP Inspector and Claude Code CLIs for the e2e tests (needs npm)
	@if command -v npm >/dev/null 2>&1; then \
		test -x $(NPM_TOOLS)/node_modules/.bin/claude -a -x $(NPM_TOOLS)/node_modules/.bin/mcp-inspector || \
		npm install --no-audit --no-fund --loglevel=error --prefix $(NPM_TOOLS) $(NPM_PACKAGES); \
	else echo "npm not found: the e2e tests with the MCP Inspector and Claude Code will be skipped"; fi

browser: ## Install Debian's Chromium for the dashboard's browser tests (needs apt and root)
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		apt-get install -y chromium >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y chromium >/dev/null; } || \
		echo "could not install chromium: the browser tests will be skipped"; \
	else echo "chromium not found and apt unavailable: the browser tests will be skipped"; fi

# Tests run on both cores (pytest-xdist); PYTEST_ARGS adds to them, e.g. PYTEST_ARGS="-n 0 -x".
# Bytecode is written (an environment may say not to): pytest then rewrites the test modules'
# asserts once, not in every run and every worker, which is most of the collection's time.
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n 2
PYTEST_ARGS ?=
# What the quick loop leaves out (the markers are given in tests/conftest.py).
QUICK := not slow and not e2e and not postgres and not browser

test: $(STAMP) lint npm-tools browser ## Lint, then the whole test suite (tests/e2e/test_wheel.py builds and installs the wheel)
	$(PYTEST) $(PYTEST_ARGS)

quick: $(STAMP) ## The loop while working: no slow, e2e, Postgres or browser test (under a minute)
	$(PYTEST) -q -m "$(QUICK)" $(PYTEST_ARGS)

lint: $(STAMP) ## Ruff and mypy (make test runs them first)
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/mypy src/lore

bench: $(STAMP) ## Every speed benchmark at its default size; JSON results in bench/results/, tables in docs/benchmarks.md
	$(BIN)/python -m bench
	$(BIN)/python -m bench.tables --write docs/benchmarks.md

dist: $(STAMP) ## Build the sdist and the wheel into dist/
	$(BIN)/python -m build --outdir dist .

docs: $(STAMP) ## Regenerate the CLI reference from --help, storage.md's schema and architecture.md's house map
	$(BIN)/python scripts/cli_reference.py > docs/cli.md
	$(BIN)/python scripts/schema_reference.py --write docs/storage.md
	$(BIN)/python scripts/house_map.py --write docs/architecture.md

clean:
	rm -rf $(VENV) $(NPM_TOOLS) build dist *.egg-info src/*.egg-info .pytest_cache
