# SpecChat. `make run` starts the app, `make test` runs every test, `make test-fast` the quick ones, `make lint`
# the linter and the type checker; each creates .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# MLX's Linux CPU wheel ships netlib's reference BLAS, whose matmul is an unoptimised loop: on it, checking
# K draft tokens costs K+1 target steps. Where Debian's OpenBLAS is installed we preload it instead (tests
# run about 5x faster, and the CPU then shows the verify cost docs/design.md's cost model describes). On macOS
# MLX runs on Metal and none of this applies.
OPENBLAS := $(firstword $(wildcard /usr/lib/*-linux-gnu/openblas-pthread/libopenblas.so.0))
RUN_ENV := $(if $(OPENBLAS),LD_PRELOAD=$(OPENBLAS),)
ifeq ($(shell uname -s)$(OPENBLAS),Linux)
$(info note: MLX runs here on reference BLAS: `apt-get install libopenblas0-pthread` (as root) makes it, and the tests, about 5x faster.)
endif

# The suite runs in TEST_WORKERS processes (pytest-xdist), a test file per worker at a time so module fixtures
# are built once. Most tests drive tiny models whose work is Python-bound on one core, so two workers use both
# cores of a CI runner. More workers on a bigger machine: `make test TEST_WORKERS=4`. Files are handed out in
# collection order, where tests/file_order.py puts the bundle build first, then the longest files by their measured
# seconds, so that short files fill both workers at the end (xdist's default, most tests first, left the three-test
# bundle file, minutes of PyInstaller, to trail the run on one worker).
TEST_WORKERS ?= 2
PARALLEL := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
# Each worker keeps a core busy, so OpenBLAS's own threads only contend with the other worker's: one thread each
# cut the drafters' tests' CPU time by 7% and their time by a fifth (measured side by side on a loaded machine).
# And each writes bytecode whatever the environment says (PYTHONDONTWRITEBYTECODE empty): otherwise every worker, and
# every child process a test starts, compiles the project's modules again and pytest rewrites each test module's
# asserts again, about 8 CPU-seconds of each worker's collection (17 against 9, measured).
TEST_ENV := $(RUN_ENV) $(if $(OPENBLAS),OPENBLAS_NUM_THREADS=1,) PYTHONDONTWRITEBYTECODE=

# Tests that need no real weights and no long runs: a verdict on a change in minutes.
SLOW_MARKERS := real_weights or packaging or statistical or soak or distributed or large_file

.PHONY: run test test-fast lint bundle clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@# Test-only references the parity tests compare our drafters with; their pins are strict, hence --no-deps.
	@# mlx-vlm's EAGLE-3 drafter imports its package, which needs pillow (requests comes with huggingface-hub);
	@# mlx-dspark's DSpark drafter imports mlx-vlm's rope helpers.
	$(BIN)/python -m pip install --quiet --no-deps dflash==0.1.0 mtplx==2.12.2 mlx-vlm==0.7.10 pillow==13.0.0 \
		mlx-dspark==0.20.3
	@# instructor (1.17.0, the latest), which the server's structured-output test drives, caps jiter below 0.15 and
	@# openai 3.57 needs 0.16: with its dependencies pip takes openai back to 3.3, so it comes without them
	@# (tenacity is the one it needs that nothing else brings).
	$(BIN)/python -m pip install --quiet --no-deps instructor==1.17.0 tenacity==9.2.1
	touch $(STAMP)

# On Linux, Qt's window plugin needs X11 libraries pip cannot install: app/system_check.py installs them (root
# with apt-get) or stops with the exact command.
run: $(STAMP)
	$(BIN)/python -m app.system_check
	$(RUN_ENV) $(BIN)/specchat

# More pytest options: `make test PYTEST_ARGS="-x tests/app"`.
PYTEST_ARGS ?=

test: $(STAMP)
	$(TEST_ENV) $(BIN)/python -m pytest $(PARALLEL) --durations=15 $(PYTEST_ARGS)

test-fast: $(STAMP)
	$(TEST_ENV) $(BIN)/python -m pytest $(PARALLEL) --durations=15 -m "not ($(SLOW_MARKERS))" $(PYTEST_ARGS)

# ruff (its rules in pyproject.toml), mypy (strict on the engine's public API) and the import-linter contracts.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# The bundled app: SpecChat.app on macOS, a onedir folder on Linux (what CI smoke-tests).
DIST := packaging/dist
bundle: $(STAMP)
ifeq ($(shell uname -s),Darwin)
	@# Build against the macOS 14 MLX wheels of the installed version, so the app runs on macOS 14 and 15.
	$(eval MLX_VERSION := $(shell $(BIN)/python -c "import importlib.metadata as m; print(m.version('mlx'))"))
	$(eval PY_VERSION := $(shell $(BIN)/python -c "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"))
	rm -rf build/mlx-wheels
	$(BIN)/python -m pip download --quiet --no-deps --only-binary=:all: --platform macosx_14_0_arm64 \
		--python-version $(PY_VERSION) mlx==$(MLX_VERSION) mlx-metal==$(MLX_VERSION) -d build/mlx-wheels
	$(BIN)/python -m pip install --quiet --force-reinstall --no-deps build/mlx-wheels/*.whl
endif
	$(BIN)/pyinstaller packaging/specchat.spec --noconfirm --clean --log-level WARN \
		--distpath $(DIST) --workpath packaging/build
	$(BIN)/python packaging/bundle_layout.py $(DIST)

clean:
	rm -rf $(VENV) build dist packaging/build packaging/dist
