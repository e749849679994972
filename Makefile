# Set-up and everyday commands. `make demo` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install demo test test-fast lint bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP) ## Create .venv and install Lore with its test tools

demo: $(STAMP) ## Seed a temporary home with demo lessons and show what recall finds
	$(BIN)/lore demo

test: $(STAMP) ## Run the whole test suite
	$(BIN)/python -m pytest

lint: $(STAMP) ## Ruff and mypy
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy src/lore

bench: $(STAMP) ## Benchmarks; results go to docs/benchmarks.md by hand
	$(BIN)/python bench/search_bench.py

docs: $(STAMP) ## Regenerate the CLI reference from --help
	$(BIN)/python scripts/cli_reference.py > docs/cli.md

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache
