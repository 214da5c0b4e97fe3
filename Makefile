# `make run` and `make test` bootstrap .venv from nothing; the finer targets compose `test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell $(PYTHON) -c "import hashlib,sys;print(hashlib.sha256(open('pyproject.toml','rb').read()).hexdigest()[:12])")
PYTEST := $(BIN)/pytest -q

export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: run test lint unit integration infra e2e bench synth clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-* && touch $(STAMP)

run: $(STAMP)
	$(BIN)/cronwheel local --demo

test: lint unit integration e2e infra

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

unit: $(STAMP)
	$(PYTEST) tests/unit

integration: $(STAMP)
	$(PYTEST) tests/integration

e2e: $(STAMP)
	$(PYTEST) -n 2 --dist loadfile tests/e2e

infra: $(STAMP)
	$(PYTEST) tests/infra

bench: $(STAMP)
	$(BIN)/python bench/burst.py --jobs 1000
	$(BIN)/python bench/fairness.py --jobs 5000
	$(BIN)/python bench/cron.py

synth: $(STAMP)
	$(BIN)/python app.py --outdir cdk.out

clean:
	rm -rf $(VENV) cdk.out build .pytest_cache .mypy_cache .ruff_cache
