# Two commands on a fresh machine: `make run` and `make test`. Everything else is a helper target.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install run test test-quick lint format bench clean-var

$(STAMP): requirements.txt requirements-nodeps.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check -q -r requirements.txt
	$(BIN)/pip install --disable-pip-version-check -q --no-deps -r requirements-nodeps.txt
	$(BIN)/python -m ecast.pipeline.nlp_data
	touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py load_demo
	$(BIN)/python manage.py rundev

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The inner loop: the suite without the browser, real-worker and slow tests. CI (.ci/run) runs `make test`, all of it.
test-quick: install
	$(BIN)/python -m pytest -m "not browser and not worker and not slow" $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Every benchmark, then the rating load at the issue's scale (500 raters, 5 s think time). Each script uses
# PostgreSQL and Redis when DATABASE_URL / REDIS_URL say so, SQLite otherwise (the rating load then steps aside).
bench: install
	@for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done
	@echo "== bench/bench_rating_load.py --raters 500 --think 5"
	@$(BIN)/python bench/bench_rating_load.py --raters 500 --think 5 --items 3000 --duration 60

clean-var:
	rm -rf var
