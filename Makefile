# faultline: `make setup` once, then `make test`. See README.md.
SHELL := /bin/bash
PY := .venv/bin/python
KAFKA_VERSION ?= 2.7.2
DEB_PACKAGES := iproute2 iptables procps maven openjdk-17-jre-headless chromium fonts-liberation
PYTEST_FLAGS ?=

.PHONY: setup setup-debian setup-venv setup-kafka test test-fast lint bench bench-cluster bench-nemesis bench-workload bench-checker

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
	@$(PY) -m testbed.kafka.dist $(KAFKA_VERSION)

lint:
	$(PY) -m ruff check .
	$(PY) -m mypy

test: lint
	$(PY) -m pytest $(PYTEST_FLAGS)

# The fast set: everything that needs neither root nor a cluster nor Spark.
test-fast:
	$(PY) -m pytest -m "not cluster and not spark and not browser" $(PYTEST_FLAGS)

bench-cluster:
	$(PY) bench/bench_cluster.py --runs 5

bench-nemesis:
	$(PY) bench/bench_nemesis.py --rounds 20

bench-workload:
	$(PY) bench/bench_workload.py --duration 15 --rounds 3

bench-checker:
	$(PY) bench/bench_checker.py --sizes 100000,1000000,10000000 --repeats 3

bench: bench-cluster bench-nemesis bench-workload bench-checker

# --- the scenario catalogue (SCENARIOS.md): each prints expected vs observed per configuration ---
SCENARIOS := $(basename $(notdir $(wildcard scenarios/*.yaml)))
PARTITION_SCENARIOS := link-leader-follower link-broker-controller isolate-az-follower isolate-az-leader \
	isolate-az-controller isolate-az-controller-leader
POWER_OFF_SCENARIOS := power-off-mid-replication unclean-election

.PHONY: test-partition test-power-off test-scenarios $(addprefix test-,$(SCENARIOS))

$(addprefix test-,$(SCENARIOS)): test-%:
	$(PY) -m harness run scenarios/$*.yaml

# Run every listed scenario even if one fails; fail at the end if any did.
define run_scenarios
	@failed=""; for s in $(1); do $(PY) -m harness run scenarios/$$s.yaml || failed="$$failed $$s"; done; \
	if [ -n "$$failed" ]; then echo "FAILED:$$failed"; exit 1; else echo "all passed: $(1)"; fi
endef

test-partition:
	$(call run_scenarios,$(PARTITION_SCENARIOS))

test-power-off:
	$(call run_scenarios,$(POWER_OFF_SCENARIOS))

test-scenarios:
	$(call run_scenarios,$(filter-out smoke,$(SCENARIOS)))

.PHONY: docs-diagram
docs-diagram:
	dot -Tsvg docs/architecture.dot -o docs/architecture.svg
