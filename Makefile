# Concord — two commands: `make run` (the app on data/concord.db with the demo study)
# and `make check` (lint + type check + the whole test suite). Both create or reuse .venv.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
RUNTIME := $(VENV)/.runtime-installed
METRICS := $(VENV)/.metrics-installed
DEV := $(VENV)/.dev-installed
PORT ?= 8501

.PHONY: run check test lint typecheck format browser venv metrics bench clean-db

$(RUNTIME): requirements.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $@

# The metrics stack (torch, transformers, OCR): for `score`, the tests and the benches, not
# for the app (make run installs only requirements.txt).
$(METRICS): $(RUNTIME) requirements-metrics.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-metrics.txt
	@touch $@

$(DEV): $(METRICS) requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $@

venv: $(DEV)

metrics: $(METRICS)

run: $(RUNTIME)
	CONCORD_PORT=$(PORT) $(PY) -m concord init
	$(VENV)/bin/streamlit run app.py --server.port $(PORT)

# Installs (as root, on Debian) the programs the tests drive when missing: chromium, nginx
# and postgresql (the tests start their own throw-away PostgreSQL server).
browser:
	@scripts/ensure-browser-tools.sh

lint: $(DEV)
	$(VENV)/bin/ruff check .

# mypy on concord/store, concord/services and evaluators/ (pyproject.toml [tool.mypy]);
# about 35 s with an empty .mypy_cache, about 1 s once it holds the unchanged modules.
typecheck: $(DEV)
	$(VENV)/bin/mypy

test: $(DEV) browser
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(PY) -m pytest -q

check: lint typecheck test

format: $(DEV)
	$(VENV)/bin/ruff check --fix .

bench: $(DEV) browser
	@for f in bench/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean-db:
	rm -f data/concord.db data/concord.db-wal data/concord.db-shm
