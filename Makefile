# make demo  — create .venv, install everything, run the offline demo
# make test  — run the whole test suite (what CI runs)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint install bench-locomo bench-scale clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,gguf]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/memstrata demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/mypy

# Benchmarks take a data path: make bench-locomo LOCOMO=../shared/data/locomo/locomo-dev.json
LOCOMO ?= ../shared/data/locomo/locomo-dev.json
bench-locomo: $(STAMP)
	$(BIN)/memstrata bench locomo $(LOCOMO) --out bench-out

N ?= 100000
bench-scale: $(STAMP)
	$(BIN)/memstrata bench scale --n $(N) --out bench-out

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
