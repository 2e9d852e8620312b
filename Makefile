# faultline: `make setup` once, then `make test`. See README.md.
SHELL := /bin/bash
PY := .venv/bin/python
KAFKA_VERSION ?= 2.7.2
DEB_PACKAGES := iproute2 iptables procps maven openjdk-17-jre-headless chromium fonts-liberation
PYTEST_FLAGS ?=
RUNTIME ?= netns
# With RUNTIME=docker, run against DOCKER_HOST (or the default socket), else the project's own dockerd for the command.
WITH_RUNTIME = $(if $(filter docker,$(RUNTIME)),$(PY) -m testbed.runtime.dockerd_cli with-daemon --)

.PHONY: setup setup-debian setup-venv setup-kafka test test-fast lint bench bench-cluster bench-nemesis bench-workload bench-checker

setup: setup-debian setup-venv setup-kafka setup-docker

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
	$(PY) -m pytest -m "not catalogue" $(PYTEST_FLAGS)

# The fast set: everything that needs neither root nor a cluster nor Spark.
test-fast:
	$(PY) -m pytest -m "not cluster and not spark and not browser and not docker" $(PYTEST_FLAGS)

bench-cluster:
	$(WITH_RUNTIME) $(PY) bench/bench_cluster.py --runs 5 --runtime $(RUNTIME) $(if $(INVENTORY),--inventory $(INVENTORY))

bench-nemesis:
	$(WITH_RUNTIME) $(PY) bench/bench_nemesis.py --rounds 20 --runtime $(RUNTIME)

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
	$(WITH_RUNTIME) $(PY) -m harness run scenarios/$*.yaml --runtime $(RUNTIME)

# Run every listed scenario even if one fails; fail at the end if any did.
define run_scenarios
	@failed=""; for s in $(1); do $(WITH_RUNTIME) $(PY) -m harness run scenarios/$$s.yaml --runtime $(RUNTIME) || failed="$$failed $$s"; done; \
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

# --- Docker images and the project's own dockerd (compose/README.md) ---
# Built without network into DOCKER_HOST, else the default socket if a daemon answers there, else a dockerd
# of our own (data root /var/lib/faultline/docker) started for the build and stopped after it.
# BASE_IMAGE: use that image instead of building faultline/base:bookworm with mmdebstrap.
# FORCE=1 (or a list such as FORCE=client,kafka) rebuilds images that exist; CLIENT_TAG names the client image;
# OWN_DOCKERD=1 always builds into our own dockerd (the one the docker tests and runtime use).
BASE_IMAGE ?=
FORCE ?=
CLIENT_TAG ?=
OWN_DOCKERD ?=
DOCKER_DEB_PACKAGES := docker.io mmdebstrap docker-compose

.PHONY: setup-docker docker-images docker-clean test-docker

setup-docker:
	@missing=$$(for p in $(DOCKER_DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages: $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  if [ -d /run/systemd/system ] && echo "$$missing" | grep -q docker.io; then \
	    echo "note: docker.io enabled its own docker.service, which changes iptables and ip_forward while it runs;"; \
	    echo "      faultline does not need it (systemctl disable --now docker.service docker.socket)"; \
	  fi; \
	fi

docker-images:
	$(PY) compose/build_images.py --kafka-version $(KAFKA_VERSION) \
	  $(if $(BASE_IMAGE),--base-image $(BASE_IMAGE)) $(if $(FORCE),--force $(FORCE)) \
	  $(if $(CLIENT_TAG),--client-tag $(CLIENT_TAG)) $(if $(OWN_DOCKERD),--daemon own)

# Stop every dockerd this project started (found by pidfile and socket under /run/faultline) and nothing else.
docker-clean:
	$(PY) -m testbed.runtime.dockerd_cli clean

test-docker:
	$(PY) -m pytest -m docker $(PYTEST_FLAGS)
