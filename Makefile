# faultline: `make setup` once, then `make test`. See README.md.
SHELL := /bin/bash
PY := .venv/bin/python
KAFKA_VERSION ?= 2.7.2
DEB_PACKAGES := iproute2 iptables procps maven openjdk-17-jre-headless chromium
PYTEST_FLAGS ?=

.PHONY: setup setup-debian setup-venv setup-kafka test test-fast lint bench bench-cluster clean-runs

setup: setup-debian setup-venv setup-kafka

setup-debian:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages: $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

setup-venv:
	@test -x $(PY) || python3.11 -m venv .venv
	@$(PY) -m pip install -q -r requirements.txt
	@$(PY) -m pip install -q --no-deps -e .

setup-kafka:
	@$(PY) -m harness.kafka.dist $(KAFKA_VERSION)

lint:
	$(PY) -m ruff check .
	$(PY) -m mypy

test: lint
	$(PY) -m pytest $(PYTEST_FLAGS)

# The fast set: everything that needs neither root nor a cluster nor Spark.
test-fast:
	$(PY) -m pytest -m "not cluster and not spark" $(PYTEST_FLAGS)

bench-cluster:
	$(PY) bench/bench_cluster.py --runs 5
