# ctpool-tui — run `make help` for the targets.
SHELL := bash
GO ?= go
BIN := bin/ctpool-tui
CLUSTER := testdata/cluster
PKGS := ./...
# A count, not a duration: a duration-bounded run (-fuzztime 10s) can fail with a bare
# "context deadline exceeded" and no crasher when the deadline races a busy worker
# (golang/go#75804, fixed in Go 1.27). A count has no deadline to race.
FUZZTIME ?= 40000x

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-zA-Z_-]+:.*## /{printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# The version stamped into the binary (ctpool-tui version, the User-Agent):
# git's description of the checkout, its commit and the build time. Outside a
# git checkout they are empty and the binary falls back to Go's build
# information. Override any of them: make build VERSION=v1.2.0.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS = -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
PLUGIN := bin/kubectl-ctpool
IMAGE ?= ctpool-tui:$(or $(VERSION),dev)

.PHONY: build
build: ## build bin/ctpool-tui and the kubectl plugin bin/kubectl-ctpool (kubectl ctpool ...)
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/ctpool-tui
	ln -f $(BIN) $(PLUGIN) 2>/dev/null || cp $(BIN) $(PLUGIN)
	printf '#!/bin/sh\n# Shell completion of "kubectl ctpool" (kubectl 1.26 and later look for this name on PATH).\nexec kubectl-ctpool __complete "$$@"\n' >bin/kubectl_complete-ctpool
	chmod +x bin/kubectl_complete-ctpool

# The image's time is the commit's (SOURCE_DATE_EPOCH), not the build's: the
# same commit gives the same image digest. -s -w, -trimpath and
# -buildvcs=false keep the binary free of the build machine's paths.
SOURCE_DATE_EPOCH ?= $(or $(shell git log -1 --format=%ct 2>/dev/null),0)
IMAGE_DATE := $(shell date -u -d @$(SOURCE_DATE_EPOCH) +%Y-%m-%dT%H:%M:%SZ)
IMAGE_BIN := dist/ctpool-tui-linux-amd64-nodemo
IMAGE_ARCHIVE ?= dist/ctpool-tui-image.tar

.PHONY: image
image: ## build the reconciler's image IMAGE (default ctpool-tui:VERSION) without a container engine, as the OCI archive IMAGE_ARCHIVE (dist/ctpool-tui-image.tar)
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -buildvcs=false -tags nodemo \
	  -ldflags '-s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(IMAGE_DATE)' -o $(IMAGE_BIN) ./cmd/ctpool-tui
	cd hack/tools/image && GOWORK=off GOFLAGS=-mod=readonly $(GO) run . -binary '$(abspath $(IMAGE_BIN))' -out '$(abspath $(IMAGE_ARCHIVE))' \
	  -name '$(IMAGE)' -version '$(VERSION)' -revision '$(COMMIT)' -created '$(SOURCE_DATE_EPOCH)'

.PHONY: test-image
test-image: ## the image builder's own tests (hack/tools/image, a module of its own): config, files, labels, reproducibility
	cd hack/tools/image && GOWORK=off GOFLAGS=-mod=readonly $(GO) vet ./... && GOWORK=off GOFLAGS=-mod=readonly $(GO) test -count=1 ./...

.PHONY: image-docker
image-docker: ## build the image IMAGE from the Dockerfile with docker, podman or buildah, for sites that have one
	@builder=; unusable=; \
	for b in docker podman buildah; do \
	  command -v $$b >/dev/null || continue; \
	  case $$b in buildah) probe=version;; *) probe=info;; esac; \
	  if $$b $$probe >/dev/null 2>&1; then builder=$$b; break; fi; \
	  unusable="$$unusable $$b"; \
	done; \
	if [ -z "$$builder" ]; then \
	  echo "make image-docker: no usable container builder (docker, podman or buildah) on this machine; nothing was built (make image needs none)."; \
	  if [ -n "$$unusable" ]; then echo "Installed but not answering (is its daemon or service running?):$$unusable"; fi; \
	  echo "Build the Dockerfile on a machine that has one."; \
	  exit 0; \
	fi; \
	sub=build; if [ $$builder = buildah ]; then sub=bud; fi; \
	set -x; $$builder $$sub --build-arg VERSION='$(VERSION)' --build-arg COMMIT='$(COMMIT)' --build-arg DATE='$(DATE)' -t '$(IMAGE)' .

.PHONY: demo
demo: ## run the dashboard on the embedded simulated cluster
	$(GO) run ./cmd/ctpool-tui --demo

.PHONY: generate
generate: ## regenerate the checked-in generated code (kube/permissions_gen.go, each action's RBAC permissions)
	$(GO) generate ./kube

.PHONY: lint
lint: ## gofmt, go.mod and go.sum tidy, a stale generated permission table, go vet (with the integration tags too), govulncheck (hack/vulndb: the live database, else an offline copy), and the linked modules' licenses (docs/licenses.md)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) run ./kube/internal/permgen -check kube/permissions_gen.go
	@out=$$(grep -l '^//go:build.*integration' $$(git ls-files '*_test.go') | grep -v '_integration_test\.go$$' || true); if [ -n "$$out" ]; then echo "a test file behind the integration tag is named *_integration_test.go:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff >/dev/null 2>&1 || { echo "go.mod/go.sum are not tidy: run go mod tidy"; $(GO) mod tidy -diff; exit 1; }
	$(GO) vet $(PKGS)
	$(GO) vet -tags integration $(PKGS)
	$(GO) vet -tags 'integration outage' $(PKGS)
	$(GO) vet -tags 'integration perf' $(PKGS)
	$(GO) vet -tags e2e $(PKGS)
	$(GO) vet -tags nodemo $(PKGS)
	$(GO) run ./hack/vulndb check ./...
	$(GO) run ./hack/licenses -check docs/licenses.md

.PHONY: licenses
licenses: ## write docs/licenses.md again: the modules the binary links on every release platform and their licenses; fails on a module without an allowed license (make lint checks the list)
	$(GO) run ./hack/licenses -w docs/licenses.md

.PHONY: vulndb
vulndb: ## cut the project's copy of the vulnerability database (hack/vulndb/db) again from a full one at VULNDB
	$(GO) run ./hack/vulndb cut -from $${VULNDB:-../shared/vulndb} -source "$${VULNDB_SOURCE:?name the full copy, e.g. golang/vulndb and its commit}" -date "$${VULNDB_DATE:?the date of the full copy, YYYY-MM-DD}"

.PHONY: test
test: lint ## everything CI runs: lint, unit and integration tests on a local control plane, the release check (linux/amd64), short fuzzing
	$(CLUSTER)/with-cluster $(MAKE) --no-print-directory test-in-cluster
	$(MAKE) --no-print-directory test-nodemo
	$(MAKE) --no-print-directory test-image
	$(MAKE) --no-print-directory release-check
	$(MAKE) --no-print-directory fuzz

.PHONY: promtool
promtool: ## build promtool (hack/tools/promtool, cached) and run the alert rules' promtool tests
	CTPOOL_PROMTOOL="$$(hack/tools/promtool/build)" CI=$${CI:-true} $(GO) test -count=1 -run '^TestAlertsPromtool$$' ./kube/controller/alerts/

.PHONY: release-snapshot
release-snapshot: ## build a release in dist/ without publishing it: archives for linux, darwin, windows x amd64, arm64, checksums.txt, an SBOM per archive, the krew manifest (validated by krew) and the Homebrew formula
	$(GO) run ./hack/release -out dist

.PHONY: release-check
release-check: ## CI's share of release-snapshot: the linux/amd64 archive, its binary run (version, --demo --once), the krew manifest validated and installed by krew, the archive built twice byte for byte
	CTPOOL_RELEASE_TEST=1 $(GO) test -count=1 -run '^TestReleaseSnapshot$$' ./hack/release/

.PHONY: test-nodemo
test-nodemo: ## the container image's build (-tags nodemo, no simulator): --demo is refused with one clear line
	$(GO) test -count=1 -tags nodemo -run NoDemo ./cmd/ctpool-tui/

.PHONY: test-in-cluster
test-in-cluster: ## unit + integration tests (the alert rules' promtool tests too; the reconciler's image, make image, on the real node), the binary in a terminal (e2e), then the outage tests alone (they stop the API server); needs a plane
	$(MAKE) --no-print-directory test-suite-in-cluster
	$(GO) test -race -count=1 -timeout 5m -tags e2e ./e2e/
	$(GO) test -race -count=1 -timeout 15m -p 1 -tags 'integration outage' -run Outage $(PKGS)

.PHONY: test-suite-in-cluster
test-suite-in-cluster: ## unit + integration tests alone (test-in-cluster's first part); needs a plane
	$(MAKE) --no-print-directory image
	pt="$$(hack/tools/promtool/build)" && CTPOOL_PROMTOOL="$$pt" CTPOOL_IMAGE_ARCHIVE='$(abspath $(IMAGE_ARCHIVE))' $(GO) test $(SUITE_RACE) -count=1 -timeout 40m -p 1 -tags integration $(PKGS)

SUITE_RACE ?= -race
# The Kubernetes versions test-versions runs the suite against: the oldest
# and the newest of the supported range (testdata/cluster/lib.sh, K8S_VERSIONS).
K8S_VERSIONS ?= v1.34.4 v1.37.2
# Where their planes run: a state dir per version, ports beside a default plane's.
VERSIONS_DIR ?= /tmp/ctpool-tui-k8s
VERSIONS_PORT_OFFSET ?= 1000

.PHONY: test-versions
test-versions: ## the integration suite against each of K8S_VERSIONS (default the oldest and the newest supported), each on a plane of its own (VERSIONS_DIR-VERSION), then down; not part of make test
	@set -e; for v in $(K8S_VERSIONS); do \
		echo "== Kubernetes $$v"; start=$$(date +%s); \
		K8S_VERSION=$$v CTPOOL_CLUSTER_DIR='$(VERSIONS_DIR)'-$$v CTPOOL_CLUSTER_PORT_OFFSET=$(VERSIONS_PORT_OFFSET) \
			$(CLUSTER)/with-cluster $(MAKE) --no-print-directory test-suite-in-cluster; \
		echo "== Kubernetes $$v: passed in $$(( $$(date +%s) - start ))s"; \
	done

.PHONY: test-unit
test-unit: ## unit and golden tests only (no control plane)
	$(GO) test -race -count=1 $(PKGS)

.PHONY: test-integration
test-integration: ## integration tests against a running plane (make cluster-up first)
	CI=$${CI:-1} $(GO) test -race -count=1 -timeout 30m -tags integration -run Integration $(PKGS)

.PHONY: test-e2e
test-e2e: ## the binary in a pseudo-terminal with a terminal emulator, on a running plane (make cluster-up first)
	CI=$${CI:-1} $(GO) test -race -count=1 -timeout 5m -tags e2e ./e2e/

# The earlier releases the mixed-version run pairs with this one: the head
# before the third round (f8fce35) and the third round's head (22c5a60).
UPGRADE_FROM ?= f8fce35 22c5a60
# Of those, the releases that cannot read the status this one records
# (f8fce35 predates the compact rows): the run checks that they say so.
UPGRADE_STATUS_UNREADABLE ?= f8fce35

.PHONY: test-upgrade
test-upgrade: ## on the running plane, this reconciler and each earlier release of UPGRADE_FROM (built by hack/oldrelease/build) hand the leadership back and forth under claims, releases and applies; prints the figures; needs the git history
	@set -e; for c in $(UPGRADE_FROM); do \
	  rc=0; bin="$$(hack/oldrelease/build $$c)" || rc=$$?; \
	  if [ $$rc = 3 ]; then echo "make test-upgrade: $$c is not in this clone's history; nothing run"; exit 1; fi; \
	  [ $$rc = 0 ]; \
	  unreadable=; case " $(UPGRADE_STATUS_UNREADABLE) " in *" $$c "*) unreadable=1;; esac; \
	  echo "== beside $$c: $$bin"; \
	  CI=$${CI:-1} CTPOOL_REQUIRE_OLD_RELEASE=1 CTPOOL_OLD_RELEASE_BINARY="$$bin" CTPOOL_OLD_RELEASE_STATUS_UNREADABLE=$$unreadable $(GO) test -count=1 -timeout 15m -tags integration \
	    -run '^TestIntegrationMixedVersionReconcilers$$' -v ./systest/; \
	done

CHAOS_OPS ?= 10000

.PHONY: test-days
test-days: ## a pool's days at random on the in-memory cluster, DAYS_SEEDS histories of each kind of pool (default 2000; make test runs 40): claims, releases, resizes, new images and lost Pods, then the settled pool's rules
	CTPOOL_DAYS_SEEDS=$(DAYS_SEEDS) $(GO) test -count=1 -timeout 30m -run '^TestDaysOfAPool$$' ./engine/

DAYS_SEEDS ?= 2000

.PHONY: chaos
chaos: ## the randomized concurrency run with CHAOS_OPS operations (default 10000) on the running plane; prints its counts
	CI=$${CI:-1} CTPOOL_CHAOS_OPS=$(CHAOS_OPS) $(GO) test -count=1 -timeout 120m -tags integration -run '^TestIntegrationRandomizedConcurrency$$' -v ./systest/

SCALE_MEMBERS ?= 10000

.PHONY: scale
scale: ## on the running plane, a pool of SCALE_MEMBERS (default 10000; 500 in make test) Unschedulable members: fill, the recorded status, delete; prints the figures
	CI=$${CI:-1} CTPOOL_SCALE_MEMBERS=$(SCALE_MEMBERS) $(GO) test -count=1 -timeout 120m -tags integration -run '^TestIntegrationStatusOfALargeUnschedulablePool$$' -v ./systest/

SOAK ?= 30m
SOAK_TIMEOUT ?= 2h

.PHONY: soak
soak: ## on the running plane, one after the other, for SOAK each (default 30m): the dashboard and the leader-elected reconciler under random traffic, then idle watches and a followed log with a short request timeout; prints the figures
	CI=$${CI:-1} CTPOOL_SOAK=$(SOAK) CTPOOL_STREAM_WINDOW=$(SOAK) $(GO) test -count=1 -p 1 -timeout $(SOAK_TIMEOUT) -tags integration \
	  -run '^(TestIntegrationSoak|TestIntegrationWatchesOutliveTheRequestTimeout|TestIntegrationLogViewFollowsForMinutes)$$' -v ./tui/ ./kube/

STREAM_WINDOW ?= 5m

.PHONY: log-stream
log-stream: ## on the running plane, the log view follows a member's log served by kwok for STREAM_WINDOW (default 5m; 30s in make test)
	CI=$${CI:-1} CTPOOL_STREAM_WINDOW=$(STREAM_WINDOW) $(GO) test -count=1 -timeout 2h -tags integration \
	  -run '^TestIntegrationLogViewFollowsForMinutes$$' -v ./tui/

.PHONY: chaos-outage
chaos-outage: ## the randomized run across an API server restart (stops and starts the plane's API server); 600 operations (CTPOOL_CHAOS_OPS overrides)
	CI=$${CI:-1} $(GO) test -count=1 -timeout 30m -tags 'integration outage' -run '^TestIntegrationRandomizedConcurrencyOutage$$' -v ./systest/

.PHONY: fuzz
fuzz: ## run each fuzz target for FUZZTIME executions (default 40000x; a duration such as 10s also works)
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

.PHONY: golden
golden: ## rewrite the golden files (tui screens, engine Pods) after an intended change: the tests of the packages that use internal/golden, with -update
	@set -eo pipefail; pkgs=$$($(GO) list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' $(PKGS) | \
	  awk '/ github.com\/ctpool-tui\/ctpool-tui\/internal\/golden( |$$)/ {print $$1}'); \
	if [ -z "$$pkgs" ]; then echo "make golden: no package's tests import internal/golden"; exit 1; fi; \
	echo $(GO) test $$pkgs -update; \
	$(GO) test $$pkgs -update

BENCH_ROUNDS ?= 5
BENCH_PKGS := engine tui kube

.PHONY: bench
bench: ## unit benchmarks in BENCH_ROUNDS interleaved rounds (default 5), then the targets they meet
	@mkdir -p .bench
	@set -e; for p in $(BENCH_PKGS); do $(GO) test -c -o .bench/$$p.test ./$$p/; done
	@set -eo pipefail; for i in $$(seq $(BENCH_ROUNDS)); do for p in $(BENCH_PKGS); do \
	  (cd $$p && ../.bench/$$p.test -test.run '^$$' -test.bench . -test.benchmem); done; done | tee .bench.out
	@$(GO) run ./hack/benchreport < .bench.out

# The reconciler at scale runs at the issue's size (1,000 pools of 10 members,
# a minute at rest, 100 deletions); CTPOOL_PERF_CONTROLLER_POOLS (a multiple of
# 10), CTPOOL_PERF_CONTROLLER_IDLE and CTPOOL_PERF_CONTROLLER_DELETIONS shrink it.
.PHONY: bench-integration
bench-integration: ## benchmarks on the running local plane (make cluster-up), then the targets they meet
	set -o pipefail; CI=$${CI:-1} $(GO) test -tags 'integration perf' -run '^$$' -bench Integration -benchtime 1x -timeout 180m ./kube/ ./systest/ | tee .bench-integration.out
	@$(GO) run ./hack/benchreport -set integration < .bench-integration.out

.PHONY: bench-elastic
bench-elastic: ## on the running plane, a burst of 20 claims on an elastic pool (spare 3): claimant to desktop p50/p95 against 20 members of one apply and one member alone
	set -o pipefail; CI=$${CI:-1} $(GO) test -tags integration -run '^$$' -bench BenchmarkIntegrationElasticBurst -benchtime 1x ./systest/ | tee .bench-elastic.out
	@$(GO) run ./hack/benchreport -set integration -only BenchmarkIntegrationElasticBurst < .bench-elastic.out

# STORM_SIZES picks the n of make bench-storm; CTPOOL_STORM_REQUEST_TIMEOUT
# (e.g. 15m) lifts the storm client's bound of each request (ctpool-tui's
# default, one minute), for a plane too slow to answer a storm's reads in it.
STORM_SIZES ?= 100,1000

.PHONY: bench-storm
bench-storm: ## on the running plane, the morning login storm (issue 41): n claims at once (STORM_SIZES, default 100,1000) on n free members and on an elastic pool of maxSize n (spare 10): Lease creates per claim, claims/s, claim to desktop p50/p95/p99 against one claim alone
	set -o pipefail; CI=$${CI:-1} CTPOOL_STORM_SIZES=$(STORM_SIZES) $(GO) test -tags integration -run '^$$' -bench '^BenchmarkIntegrationClaimStorm$$' -benchtime 1x -timeout 180m ./systest/ | tee .bench-storm.out
	@$(GO) run ./hack/benchreport -set integration -only BenchmarkIntegrationClaimStorm < .bench-storm.out

.PHONY: bench-node
bench-node: ## on the running plane's real node: a release end to end, p50 and p95 (BENCH_NODE_N releases, default 10)
	CI=$${CI:-1} $(GO) test -tags integration -run '^$$' -bench BenchmarkIntegrationRealNodeRelease -benchtime $(BENCH_NODE_N)x -timeout 30m ./cmd/ctpool-tui/

BENCH_NODE_N ?= 10

# ctpool-tui and k9s side by side (hack/peers): k9s at a pinned version,
# built from the Go module proxy into the cache when missing.
K9S_VERSION ?= v0.50.16
PEERS_K9S ?= $(HOME)/.cache/ctpool-tui/peers/$(K9S_VERSION)/k9s
PEERS_MEMBERS ?= 10000

.PHONY: bench-peers
bench-peers: build ## on the running plane, ctpool-tui and k9s on one pool of PEERS_MEMBERS (default 10000): first screen, RSS, idle CPU, a claim on screen, CPU under a churn of claims (PEERS_CHURN=0 skips it)
	@test -x '$(PEERS_K9S)' || { echo "installing k9s $(K9S_VERSION) into $(dir $(PEERS_K9S))"; \
	  GOBIN='$(abspath $(dir $(PEERS_K9S)))' GOFLAGS=-buildvcs=false $(GO) install github.com/derailed/k9s@$(K9S_VERSION); }
	PEERS_K9S='$(PEERS_K9S)' PEERS_MEMBERS=$(PEERS_MEMBERS) PEERS_CTPOOL_TUI=$(BIN) $(GO) run ./hack/peers

.PHONY: cluster-build
cluster-build: ## build (or reuse) the local control plane binaries
	$(CLUSTER)/build

.PHONY: cluster-up
cluster-up: ## start the local control plane (etcd, kube-apiserver, scheduler, controllers, kwok)
	$(CLUSTER)/up

.PHONY: cluster-down
cluster-down: ## stop the local control plane
	$(CLUSTER)/down

.PHONY: playground
playground: cluster-up build ## a local plane with two demo pools; then run bin/ctpool-tui
	$(CLUSTER)/playground $(BIN)
