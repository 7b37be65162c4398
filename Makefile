# Two entry points for a fresh machine: `make demo` (set up, index the bundled sample warehouse,
# query it) and `make test` (the whole suite, as CI runs it).
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
DB ?= viewlineage-demo/viewlineage.duckdb
SAMPLE := tests/data/sample/warehouse

.PHONY: setup demo browser test lint bench bench-index bench-latency clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Strict editable mode links each module into build/__editable__.*, so mypy can follow the
# viewlineage.* package mapping; re-run after adding a module.
# (PYTHONWARNINGS silences setuptools' notice that a strict install links from build/.)
setup: $(BIN)/python
	PYTHONWARNINGS=ignore $(BIN)/python -m pip install -q -e '.[dev,spark]' --config-settings editable_mode=strict

demo: setup
	$(BIN)/python tests/data/restore_mtimes.py
	mkdir -p $(dir $(DB))
	rm -rf $(DB) $(DB).replica $(DB).replicas $(DB).spool
	$(BIN)/viewlineage --db $(DB) index $(SAMPLE) --catalog-map $(SAMPLE)=prod --no-progress
	$(BIN)/viewlineage --db $(DB) show prod.db.big_days --as-of 2026-11-21T23:17:26.5Z
	$(BIN)/viewlineage --db $(DB) uses prod.db.events --transitive
	$(BIN)/viewlineage --db $(DB) impact prod.db.events --drop-column kind

# The web UI's tests drive Debian's chromium (Playwright downloads no browser): installed when missing.
browser:
	@command -v chromium >/dev/null || { \
		if [ "$$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi; \
		$$sudo apt-get update -qq && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

test: setup browser
	$(BIN)/python -m pytest -q --durations=12 -n 2 --dist loadfile

lint: setup
	$(BIN)/ruff check indexer sinks queries tests scripts
	$(BIN)/ruff format --check indexer sinks queries tests scripts
	MYPYPATH=$$(ls -d build/__editable__.viewlineage-*) $(BIN)/mypy -p viewlineage
	$(BIN)/mypy scripts
	$(BIN)/lint-imports --no-cache

bench: setup  ## every suite, one table each: ~45 minutes on 2 cores (BENCHMARKS.md)
	$(BIN)/python -m tests.bench.run
	$(BIN)/python -m tests.bench.latency
	$(BIN)/python -m tests.bench.backfill --files 20000
	$(BIN)/python -m tests.bench.scale --views 1000 --commits 100

bench-index: setup
	$(BIN)/python -m tests.bench.run

bench-latency: setup
	$(BIN)/python -m tests.bench.latency

clean:
	rm -rf $(VENV) build *.egg-info viewlineage-demo
