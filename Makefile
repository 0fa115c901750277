# SpecChat. `make run` starts the app, `make test` runs every test; both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# MLX's Linux CPU wheel ships netlib's reference BLAS, whose matmul is an unoptimised loop: on it, checking
# K draft tokens costs K+1 target steps. Where Debian's OpenBLAS is installed we preload it instead (tests
# run about 5x faster, and the CPU then shows the verify cost DESIGN.md's cost model describes). On macOS
# MLX runs on Metal and none of this applies.
OPENBLAS := $(firstword $(wildcard /usr/lib/*-linux-gnu/openblas-pthread/libopenblas.so.0))
RUN_ENV := $(if $(OPENBLAS),LD_PRELOAD=$(OPENBLAS),)

.PHONY: run test bench bundle clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(RUN_ENV) $(BIN)/specchat

test: $(STAMP)
	$(RUN_ENV) $(BIN)/python -m pytest

clean:
	rm -rf $(VENV) build dist packaging/build packaging/dist
