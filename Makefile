# inferlab: `make demo` runs the embedded default; `make test` is what CI runs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)

.PHONY: demo test lint typecheck unit bench-accuracy clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

demo: $(STAMP)
	$(BIN)/inferlab demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts
	$(BIN)/python scripts/check_size.py
	$(BIN)/python scripts/module_map.py --check

typecheck: $(STAMP)
	$(BIN)/mypy --strict src/

unit: $(STAMP)
	test -x /usr/bin/chromium || (apt-get update -qq && apt-get install -y -qq chromium) \
		|| echo "chromium not installed: the browser test of the HTML report will be skipped"
	$(BIN)/pytest

test: lint typecheck unit

bench-accuracy: $(STAMP)
	$(BIN)/python benchmarks/client_accuracy.py --record

clean:
	rm -rf $(VENV) build dist src/*.egg-info .mypy_cache .ruff_cache .pytest_cache
