# faultline: `make setup` once, then `make test`. See README.md.
SHELL := /bin/bash
PY := .venv/bin/python
# The default Kafka version has one owner, testbed/dist/kafka.py's DEFAULT_VERSION line, read here. KAFKA_VERSION
# given on the command line or in the environment replaces it; KAFKA_VERSION=default names it (and, as any given
# value, pins every run of `make nightly`/`test-*` to it: the nightly workflow's way when no version is chosen).
DEFAULT_KAFKA_VERSION := $(shell sed -n 's/^DEFAULT_VERSION = "\([^"]*\)"$$/\1/p' testbed/dist/kafka.py)
KAFKA_VERSION ?= $(DEFAULT_KAFKA_VERSION)
ifeq ($(KAFKA_VERSION),default)
override KAFKA_VERSION := $(DEFAULT_KAFKA_VERSION)
endif
DEB_PACKAGES := iproute2 iptables procps maven openjdk-17-jre-headless openjdk-17-jdk-headless libfaketime chromium fonts-liberation
PYTEST_FLAGS ?=
RUNTIME ?= netns
# actionlint checks the workflows in `make lint`; built from its Go module at this pinned version (docs/campaigns.md).
ACTIONLINT_VERSION := 1.7.12
ACTIONLINT := .venv/bin/actionlint
GO ?= $(or $(shell command -v go 2>/dev/null),$(wildcard /usr/local/go/bin/go),/usr/bin/go)
# With RUNTIME=docker, run against DOCKER_HOST (or the default socket), else the project's own dockerd for the command.
WITH_RUNTIME = $(if $(filter docker,$(RUNTIME)),$(PY) -m testbed.runtime.dockerd_cli with-daemon --)
# Prerequisite of every target that runs a cluster: with RUNTIME=docker, `docker-images` first (it skips the images
# that exist and were built from the same inputs, so a second call costs a few seconds, compose/build_images.py).
IMAGES = $(if $(filter docker,$(RUNTIME)),docker-images)

.PHONY: setup setup-says setup-lake setup-debian setup-python setup-venv setup-kafka setup-unsyncfs setup-actionlint test test-fast test-versions test-transactions test-campaign test-extended test-disks test-disks-clocks lint \
	bench bench-cluster bench-nemesis bench-workload bench-txn bench-unsyncfs bench-checker bench-checker-groups bench-checker-100m bench-phases bench-lake bench-lake-year bench-merge ingest notebook spark-cluster

setup: setup-says setup-debian setup-venv setup-kafka setup-unsyncfs setup-docker setup-actionlint

# What `make setup` is about to install, said before it starts (each step skips what is already there).
setup-says:
	@echo "make setup installs what is missing of:"
	@echo "  Debian packages (apt-get, as root): $(DEB_PACKAGES) $(DOCKER_DEB_PACKAGES)"
	@echo "  .venv: $(or $(PYTHON),python3) -m venv, the pins of requirements-dev.txt from PyPI, this checkout"
	@echo "  Kafka $(KAFKA_VERSION) (kafka_2.13, kafka-tools, their dependencies) from Maven Central into $${FAULTLINE_CACHE:-$$HOME/.cache/faultline}, and its class-data archives (a one-node cluster on 127.0.0.1 for ~20 s)"
	@echo "  build/bin/unsyncfs (Go; Debian's golang-go if there is no Go; modules from the Go module proxy)"
	@echo "  .venv/bin/actionlint $(ACTIONLINT_VERSION) (go install)"
	@echo "  not the Docker images (only the docker runtime needs them): make docker-images"

# What merging shards and the lake's ingest need (Java for Spark, the venv): the nightly workflow's merge job.
setup-lake: setup-debian setup-venv

setup-debian:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages: $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# The Python that makes .venv: python3.11 if there is one, else python3 (3.11 or later).
PYTHON ?= $(shell command -v python3.11 || command -v python3)

# Debian splits `python3.X -m venv` off into python3.X-venv (ensurepip and its wheels): install it if missing.
setup-python:
	@test -n "$(PYTHON)" || { echo "no python3.11 or python3: apt-get install python3 python3-venv"; exit 3; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "$(PYTHON) is older than 3.11: make setup PYTHON=/path/to/python3.11"; exit 3; }
	@if ! $(PYTHON) -c 'import ensurepip' >/dev/null 2>&1; then \
	  pkg=python$$($(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')-venv; \
	  if ! command -v apt-get >/dev/null; then echo "$(PYTHON) has no ensurepip (venv) and there is no apt-get"; exit 3; fi; \
	  echo "installing Debian package $$pkg ($(PYTHON) -m venv needs its ensurepip)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$pkg >/dev/null; \
	fi

# requirements-dev.txt: the exact runtime pins (requirements.txt) and the development tools.
setup-venv:
	@test -x $(PY) || { $(MAKE) --no-print-directory setup-python && $(PYTHON) -m venv .venv; }
	@$(PY) -m pip install -q -r requirements-dev.txt
	@$(PY) -m pip install -q --no-deps -e .

# The Kafka jars, then the class-data archives the netns nodes' JVMs start from (testbed/kafka/classdata_build.py: a
# one-node ZooKeeper and broker on 127.0.0.1 for ~20 s, skipped when current; nodes start without them if it fails).
setup-kafka:
	@$(PY) -m testbed.dist.kafka $(KAFKA_VERSION)
	@$(PY) -m testbed.kafka.classdata_build $(KAFKA_VERSION)

# The lose-unsynced-writes FUSE filesystem under the nodes' data directories (testbed/unsyncfs, Go + go-fuse,
# modules from the Go module proxy). Go from PATH or /usr/local/go, else Debian's golang-go. It mounts with
# mount(2) itself (root), so it needs /dev/fuse and no fusermount.
UNSYNCFS := build/bin/unsyncfs
setup-unsyncfs: $(UNSYNCFS)

$(UNSYNCFS): $(wildcard testbed/unsyncfs/*.go) testbed/unsyncfs/go.mod testbed/unsyncfs/go.sum
	@test -x $(GO) || { echo "installing Debian packages: golang-go"; apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends golang-go >/dev/null; }
	cd testbed/unsyncfs && $(GO) build -trimpath -o ../../$(UNSYNCFS) .

setup-actionlint:
	@if ! $(ACTIONLINT) -version 2>/dev/null | grep -qx 'v$(ACTIONLINT_VERSION)'; then \
	  echo "installing actionlint $(ACTIONLINT_VERSION) into .venv/bin"; \
	  GOBIN=$(abspath .venv/bin) $(GO) install github.com/rhysd/actionlint/cmd/actionlint@v$(ACTIONLINT_VERSION); \
	fi

lint:
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(ACTIONLINT) .github/workflows/*.yml

test: lint
	$(PY) -m pytest -m "not catalogue and not versions and not transactions and not campaign and not groups and not extended and not disks and not clocks and not operations and not soak" $(PYTEST_FLAGS)

# The longer variants of `make test`'s own tests (marker `extended`): more seeds of the engine comparisons, the smoke
# scenario on Docker, power-cut-cluster's two flush settings, FaultlineCluster's guard against a client left open.
test-extended: $(IMAGES)
	$(PY) -m pytest -m extended $(PYTEST_FLAGS)

# A short real campaign end to end (two scenarios, a two-cell matrix, a random-chaos seed; ~2 minutes), its
# index.html opened in headless Chromium: kept out of `make test`, as the long runs are.
test-campaign:
	$(PY) -m pytest -m campaign $(PYTEST_FLAGS)

# Kafka versions other than the default on a real cluster (docs/runtimes.md, "Kafka versions"): kept out of
# `make test`; the first run fetches each version's jars (and Java 11 where the version table asks for it).
test-versions:
	$(PY) -m pytest -m versions $(PYTEST_FLAGS)

# The transactions runs on a real cluster beyond the ones `make test` runs (txn-smoke no-fault, txn-coordinator-az
# isolate, eos-pipeline exactly-once): txn-smoke under a leader kill, txn-coordinator-az past-timeout, zombie-fencing,
# txn-power-cut-cluster (both flush settings; needs unsyncfs), eos-pipeline at-least-once, hanging-transaction (2.7.2,
# 3.7.2 with and without partition verification), txn-delayed-endtxn before-abort (netns). `make test-<scenario>` runs
# one scenario's every configuration.
test-transactions: $(IMAGES)
	$(PY) -m pytest -m transactions $(PYTEST_FLAGS)

# Disk and clock faults on a real cluster: `go test` of unsyncfs's rules (no mount, no root), disk-error-leader and
# clock-jump-coordinator on netns with their mechanisms checked (markers `disks`, `clocks`: the filesystem's counts and
# the halted broker restarted; the coordinator's clock stepped in its own log and transaction log), then the other disk
# scenarios in one process (~7 minutes in all on 2 cores). `make test` runs one short configuration of each (marker
# `faults_short`). test-disks is the same target under its old name.
DISK_SCENARIOS := disk-full-leader disk-full-az slow-fsync-follower slow-fsync-leader jbod-dir-failure
test-disks-clocks: $(UNSYNCFS)
	cd testbed/unsyncfs && $(GO) test ./...
	$(PY) -m pytest -m "disks or clocks" $(PYTEST_FLAGS)
	$(call run_scenarios,$(DISK_SCENARIOS))

test-disks: test-disks-clocks

# The fast set: everything that needs neither root nor a cluster nor Spark (nor installs packages).
test-fast:
	$(PY) -m pytest -m "not cluster and not spark and not browser and not docker and not network and not fuse" $(PYTEST_FLAGS)

# CONTROLLER=N: steer the controller as most scenarios do (cluster.controller); BENCH_RUNS: how many ups.
BENCH_RUNS ?= 5
bench-cluster: $(IMAGES)
	$(WITH_RUNTIME) $(PY) bench/bench_cluster.py --runs $(BENCH_RUNS) --runtime $(RUNTIME) $(if $(INVENTORY),--inventory $(INVENTORY)) \
	  $(if $(CONTROLLER),--controller $(CONTROLLER))

bench-nemesis: $(IMAGES)
	$(WITH_RUNTIME) $(PY) bench/bench_nemesis.py --rounds 20 --runtime $(RUNTIME)

bench-workload:
	$(PY) bench/bench_workload.py --duration 15 --rounds 3

# The transactional producer (6 and 100 sends per transaction, all committed) against the plain one, both acks=all.
bench-txn:
	$(PY) bench/bench_workload.py --duration 15 --rounds 3 --transactional 6,100

# The lose-unsynced-writes filesystem's cost: bench-workload's producers on unsyncfs and without it.
bench-unsyncfs: $(IMAGES)
	$(WITH_RUNTIME) $(PY) bench/bench_unsyncfs.py --runtime $(RUNTIME) --duration 15 --rounds 2 \
		$(if $(filter docker,$(RUNTIME)),--perf-host node)

# The Spark engine warm (v1 and v2 histories in turn), as whole cold processes, pandas (time, peak memory) and the
# full-column scan, one beside the other (~8 min on 2 cores); BENCH_CHECKER_FLAGS="--repeats 3" for medians.
BENCH_CHECKER_FLAGS ?= --sizes 1000000,10000000 --repeats 1
bench-checker:
	$(PY) bench/bench_checker.py --whole --whole-engine spark --txn $(BENCH_CHECKER_FLAGS)

# Contract v3's cost: each engine on a history of six group members committing (checkers.synth_groups) and on the
# same history without its commits (v1), in turn, Spark warm, pandas in its capped child (over 6 min on 2 cores).
BENCH_GROUPS_FLAGS ?= --sizes 10000000 --repeats 3 --pandas-repeats 1
bench-checker-groups:
	$(PY) bench/bench_checker.py --groups $(BENCH_GROUPS_FLAGS)

# The checker at 100M operations (issue 41): the history made tile by tile (checkers.synth_scale, ~2 GiB, cached),
# the Spark engine warm and as a whole process beside the full-column scan, pandas refused (more than the memory).
# Longer than 10 minutes on 2 cores: BENCH_CHECKER_100M_FLAGS="--skip-warm" (whole processes only) or
# "--skip-whole" (warm only) split it.
BENCH_CHECKER_100M_FLAGS ?=
bench-checker-100m:
	$(PY) bench/bench_checker.py --sizes 100000000 --repeats 1 --whole --whole-engine spark $(BENCH_CHECKER_100M_FLAGS)

bench-lake:
	$(PY) bench/bench_lake.py --runs 100 --operations 10000000

# The lake at a year of nights (issue 41): one more night of 65 runs ingested into lakes of 100, 2,400 and 24,000
# runs (spark_analysis.synthetic_lake, built once and cached), and the notebook over each.
BENCH_LAKE_YEAR ?= 100,2400,24000
bench-lake-year:
	$(PY) bench/bench_lake.py --year $(BENCH_LAKE_YEAR)

# `harness campaign merge` of 8 synthetic shards of 50 runs, with the lake's Spark ingest.
bench-merge:
	$(PY) bench/bench_merge.py --shards 8 --runs 50

# Where a configuration's time goes, per phase: BENCH_SCENARIOS run in one process (or BENCH_RESULTS read).
BENCH_SCENARIOS ?= isolate-az-leader unclean-election
BENCH_RESULTS ?=
bench-phases: $(if $(BENCH_RESULTS),,$(IMAGES))
	$(WITH_RUNTIME) $(PY) bench/bench_phases.py $(if $(BENCH_RESULTS),--results $(BENCH_RESULTS),$(BENCH_SCENARIOS))

bench: bench-cluster bench-nemesis bench-workload bench-checker bench-lake

# --- the results lake and its notebook (docs/results-lake.md) ---
RESULTS ?= results
LAKE ?= $(RESULTS)/lake
SPARK_MASTER ?= local[*]

ingest:
	$(PY) -m spark_analysis ingest $(RESULTS) --lake $(LAKE) $(if $(filter-out local%,$(SPARK_MASTER)),--spark-master $(SPARK_MASTER))

# Ingest, then run spark_analysis/analysis.ipynb headless: $(LAKE)-analysis.ipynb (executed) and .html beside the lake.
notebook: ingest
	$(PY) -m spark_analysis.notebook --lake $(LAKE) --spark-master '$(SPARK_MASTER)'

# A standalone Spark master and worker from the installed pyspark, on loopback, until Ctrl-C.
spark-cluster:
	$(PY) -m spark_analysis spark-cluster

# --- the scenario catalogue (SCENARIOS.md): each prints expected vs observed per configuration ---
# soak runs six hours: not a `test-<scenario>` of its own spec, nor in test-scenarios; `make test-soak` runs 20 minutes.
SCENARIOS := $(filter-out soak,$(basename $(notdir $(wildcard scenarios/*.yaml))))
PARTITION_SCENARIOS := link-leader-follower link-broker-controller isolate-az-follower isolate-az-leader \
	isolate-az-controller isolate-az-controller-leader
POWER_OFF_SCENARIOS := power-off-mid-replication unclean-election
POWER_CUT_SCENARIOS := power-cut-cluster power-cut-az
DEGRADED_LINK_SCENARIOS := lossy-leader-link slow-az
GROUP_SCENARIOS := at-most-once-crash at-least-once-crash auto-commit-crash zombie-consumer coordinator-failover

.PHONY: test-soak test-operations test-partition test-power-off test-power-cut test-degraded-links test-groups test-batch-consume-skip test-offsets-expire-on-load test-scenarios $(addprefix test-,$(SCENARIOS))

# KAFKA_VERSION given on the command line or in the environment replaces each spec's (--kafka-version);
# METADATA=kraft|zookeeper each spec's cluster.metadata (--metadata; docs/runtimes.md, "KRaft").
RUN_KAFKA_VERSION = $(if $(filter-out file,$(origin KAFKA_VERSION)),--kafka-version $(KAFKA_VERSION)) \
	$(if $(METADATA),--metadata $(METADATA))

$(addprefix test-,$(SCENARIOS)): test-%: $(IMAGES)
	$(WITH_RUNTIME) $(PY) -m harness run scenarios/$*.yaml --runtime $(RUNTIME) $(RUN_KAFKA_VERSION)

# Every listed scenario in one process (one warm Spark session, each configuration judged while the next
# story runs), even if one fails; the last line says which failed, the status is the worst (harness.batch).
define run_scenarios
	$(WITH_RUNTIME) $(PY) -m harness run $(patsubst %,scenarios/%.yaml,$(1)) --runtime $(RUNTIME) $(RUN_KAFKA_VERSION)
endef

test-partition: $(IMAGES)
	$(call run_scenarios,$(PARTITION_SCENARIOS))

# Consumer groups under faults (contract v3): members killed under each commit mode as the catalogue runs them; then
# a zombie member and the group coordinator's broker lost, every configuration, each with its mechanism checked in
# its history (tests/workloads/test_group_faults_cluster.py, marker `groups`; power cuts need unsyncfs).
GROUP_PYTEST_SCENARIOS := zombie-consumer coordinator-failover
test-groups: $(IMAGES)
	$(call run_scenarios,$(filter-out $(GROUP_PYTEST_SCENARIOS),$(GROUP_SCENARIOS)))
	$(PY) -m pytest -m groups $(PYTEST_FLAGS)

# librdkafka's batch consume skipping offsets at a cooperative rebalance (fixed in 2.1.0): the affected client 2.0.2,
# then the fixed 2.1.1 (docs/scenarios.md, "batch-consume-skip"; a client under test runs on netns only).
test-batch-consume-skip:
	$(PY) -m harness run scenarios/versions/batch-consume-skip.yaml --runtime netns $(RUN_KAFKA_VERSION)

# KAFKA-8069: committed offsets expired once a coordinator loads them, the protocol pinned to 2.0: Kafka 2.1.1
# (affected), 2.2.0 (fixed), 2.1.1 unpinned (docs/scenarios.md, "offsets-expire-on-load"; netns: they run on Java 11).
test-offsets-expire-on-load:
	$(PY) -m harness run scenarios/versions/offsets-expire-on-load.yaml --runtime netns

# Operations as faults (issue 39): a rolling restart and a reassignment on a real cluster with their mechanism checked,
# then the rolling-restart, rolling-upgrade, reassign-under-partition, replace-broker and client-upgrade scenarios, every configuration; kept out of
# `make test` but for rolling-restart's short configuration (tests/scenarios/test_catalogue.py).
OPERATION_SCENARIOS := rolling-restart rolling-upgrade reassign-under-partition replace-broker client-upgrade
test-operations: $(IMAGES)
	$(PY) -m pytest -m operations $(PYTEST_FLAGS)
	$(call run_scenarios,$(OPERATION_SCENARIOS))

test-power-off: $(IMAGES)
	$(call run_scenarios,$(POWER_OFF_SCENARIOS))

test-power-cut: $(IMAGES)
	$(call run_scenarios,$(POWER_CUT_SCENARIOS))

test-degraded-links: $(IMAGES)
	$(call run_scenarios,$(DEGRADED_LINK_SCENARIOS))

# The soak (issue 41): scenarios/soak.yaml for 20 minutes (--set duration_s=1200) on netns, its verdict and run.json's
# `resources` series checked flat (marker `soak`, tests/scenarios/test_soak.py; about 27 minutes in all on 2 cores).
# Its six hours: `python -m harness run scenarios/soak.yaml`.
test-soak:
	$(PY) -m pytest -m soak $(PYTEST_FLAGS)

# The whole catalogue; CATALOGUE=... runs a subset in the same one process (e.g. the 11 scenarios of BENCHMARKS.md).
CATALOGUE ?= $(filter-out smoke,$(SCENARIOS))
test-scenarios: $(IMAGES)
	$(call run_scenarios,$(CATALOGUE))

.PHONY: docs-diagram spec-docs history-docs
docs-diagram:
	dot -Tsvg docs/architecture.dot -o docs/architecture.svg

# docs/spec.schema.json and the key tables of docs/spec.md, from harness/spec_keys.py (a test checks they are current).
spec-docs:
	$(PY) -m harness.spec_schema

# The table, column and anomaly tables of docs/history.md, from checkers/schema.py and checkers/anomalies.py
# (a test checks they are current).
history-docs:
	$(PY) -m checkers.history_docs

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

# --- campaigns (docs/campaigns.md, "Nightly chaos") ---
# CAMPAIGN: a name under campaigns/ or a campaign file; BUDGET (e.g. 60m): else the file's; SEED: else the date's.
# KAFKA_VERSION given on the command line or in the environment applies to every run (else each spec's).
# SHARD=I/N: run only share I of the plan split N ways (each share with the whole BUDGET); `make campaign-merge
# SHARDS="DIR..."` joins the shards' campaign folders (or folders holding them) into one campaign (MERGE_OUT: where).
CAMPAIGN ?= nightly
BUDGET ?=
SEED ?=
SHARD ?=
SHARDS ?=
MERGE_OUT ?=
CAMPAIGN_FILE = $(if $(filter %.yaml %.yml,$(CAMPAIGN)),$(CAMPAIGN),campaigns/$(CAMPAIGN).yaml)
CAMPAIGN_FLAGS = --runtime $(RUNTIME) $(if $(BUDGET),--budget $(BUDGET)) $(if $(SEED),--seed $(SEED)) \
	$(if $(SHARD),--shard $(SHARD)) $(if $(filter-out file,$(origin KAFKA_VERSION)),--kafka-version $(KAFKA_VERSION))

.PHONY: nightly chaos-quick stability campaign-merge campaign-summary campaign-flakes stability-table stability-keep

nightly: $(IMAGES)
	$(WITH_RUNTIME) $(PY) -m harness campaign $(CAMPAIGN_FILE) $(CAMPAIGN_FLAGS)

chaos-quick: $(IMAGES)
	$(WITH_RUNTIME) $(PY) -m harness campaign campaigns/quick.yaml $(CAMPAIGN_FLAGS)

# Every netns catalogue configuration 5 times (campaigns/stability.yaml: hours; SHARD=I/N and SEED= as nightly), in
# parts: the runs already in the lake and the kept campaigns (campaigns/lake/) count, so each part plans only the rest.
stability: $(IMAGES)
	$(WITH_RUNTIME) $(PY) -m harness campaign campaigns/stability.yaml $(CAMPAIGN_FLAGS) --resume $(LAKE) \
	  --resume $(KEPT_LAKE)

campaign-merge:
	@test -n "$(SHARDS)" || { echo 'campaign-merge: give the shards: make campaign-merge SHARDS="DIR..."'; exit 3; }
	$(PY) -m harness campaign merge $(SHARDS) $(if $(MERGE_OUT),--out $(MERGE_OUT)) --lake $(LAKE)

# Outcomes over the last campaigns of CAMPAIGN's name in the lake; exit status 1 when a case's flake rate over the
# file's flake_rate.window passes its threshold (the nightly workflow's check).
campaign-flakes:
	$(PY) -m campaign.flakes $(CAMPAIGN_FILE) --lake $(LAKE)

# The stability campaigns' flake table, from the lake and the kept campaigns (campaigns/lake/), written into
# BENCHMARKS.md between its markers (exit status 1 when a configuration flaked over the window: the table is written
# first). `make stability-keep` copies the lake's stability campaigns (their rows: outcomes, counts, durations; not
# the runs) into campaigns/lake/, to commit, so that runs made on other machines and days add up.
KEPT_LAKE = campaigns/lake
stability-table:
	$(PY) -m campaign.flakes campaigns/stability.yaml --lake $(LAKE) --lake $(KEPT_LAKE) --write BENCHMARKS.md

stability-keep:
	mkdir -p $(KEPT_LAKE)/campaigns
	cp -R $(LAKE)/campaigns/campaign_id=stability-* $(KEPT_LAKE)/campaigns/

# The latest campaign's summary.md: printed, and added to the GitHub job summary when there is one.
campaign-summary:
	@summary=results/campaigns/latest/summary.md; \
	if [ ! -f "$$summary" ]; then echo "no campaign summary: $$summary does not exist"; exit 1; fi; \
	if [ -n "$$GITHUB_STEP_SUMMARY" ]; then cat "$$summary" >> "$$GITHUB_STEP_SUMMARY"; fi; \
	cat "$$summary"
