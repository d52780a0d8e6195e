# skewlens build entry points. `make help` lists them.
GO          ?= go
BIN         := bin/skewlens
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
KAFKA_HOME  ?= $(HOME)/.cache/skewlens/kafka
# How long `make run` runs (Ctrl-C stops it sooner). The default is the
# simulated incidents' play time, 10 simulated minutes at --speed 10, and
# a few seconds for their last windows to land; DURATION=10m keeps the API,
# the web view and ClickHouse up longer to explore (the incidents still
# play for about a minute).
DURATION    ?= 75s
# Benchmarks run on one core (-cpu 1), as the figures of docs/performance.md are per core.
BENCHFLAGS  ?= -run '^$$' -bench . -benchmem -cpu 1 -count 1

.PHONY: help build deps deps-run test test-loops test-side java test-fuzz bench check lint run demo fleet incidents flink-fixtures clean

help: ## Show the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# VCS stamping of `make build` (go build -buildvcs): auto stamps the git
# revision that `skewlens version` prints, even where GOFLAGS turns it off
# (go env -w GOFLAGS=-buildvcs=false); BUILDVCS=false when git cannot read
# the clone (go build then says so).
BUILDVCS    ?= auto

build: ## Build bin/skewlens, stamped with the git revision (BUILDVCS=false to skip).
	$(GO) build -buildvcs=$(BUILDVCS) -o $(BIN) ./cmd/skewlens

deps: ## Install what the tests and `make run` need when absent: clickhouse-server, zookeeper (the cluster test), prometheus-alertmanager, chromium, promtool and systemd-analyze (apt), kubernetes-validate (PyPI), chDB (npm), Kafka jars (Maven).
	bash internal/localch/install.sh
	bash deploy/zookeeper/install.sh
	bash deploy/alertmanager/install.sh
	bash deploy/chromium/install.sh
	bash deploy/prometheus/install.sh
	bash deploy/systemd/install.sh
	bash deploy/kubernetes/install.sh >/dev/null
	bash deploy/clickhouse/install-chdb.sh >/dev/null
	bash deploy/kafka/install.sh "$(KAFKA_HOME)"

deps-run: ## Install only what `make run` (skewlens demo) needs when absent: clickhouse-server (apt). skewlens run against your own servers needs nothing.
	bash internal/localch/install.sh

# The Go package of the real-cluster loops (Flink clusters, the job
# matrix): most of `make test`'s time, spent waiting on windows and
# outages in real time as much as on the cores. `make test` runs it
# (test-loops) from the start and, beside it, `make java` and then the
# other Go packages one at a time (test-side): two test processes at a
# time, as `go test ./...` runs on two cores, and no wait for the Java
# module first. Each lane's output is printed when it ends (make -O).
LOOPS       := ./cmd/skewlens

test: deps ## Vet, then test-loops and test-side side by side: every Go test and deploy/flink's build and tests; the tests start and stop a real Kafka broker, ClickHouse server and Flink MiniClusters and standalone clusters (CI runs this).
	$(GO) vet ./...
	@$(MAKE) --no-print-directory -j2 -Otarget test-loops test-side

test-loops: ## The Go tests of the real-cluster loops (LOOPS: the Flink clusters, the job matrix).
	$(GO) test -count=1 -timeout 60m $(LOOPS)

# make java holds deploy/flink's build lock, which the Go tests' Maven
# builds (flinktest) take too: the module's target/ is written by one
# build at a time.
test-side: ## make java, then the Go tests of every package but LOOPS, one package at a time.
	@mkdir -p deploy/flink/target
	flock deploy/flink/target/.build.lock $(MAKE) --no-print-directory java
	$(GO) test -p 1 -count=1 -timeout 60m $$($(GO) list ./... | grep -v '/cmd/skewlens$$')

java: ## Build and test the Flink-side modules of deploy/flink: common, reporter, library, scenarios (mvn verify: MiniCluster and real-broker tests, the plugin jar) on Flink 2.3.0, then common, reporter and library again on 1.20.5 (built under target/flink-1.20).
	cd deploy/flink && mvn -B -q verify
	cd deploy/flink && mvn -B -q test -pl library -am -Dflink.version=1.20.5 -Dskewlens.buildDir=target/flink-1.20

test-fuzz: ## Run each fuzz target for 10 s.
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test $$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime 10s || exit 1; \
	  done; \
	done

bench: ## Run the benchmarks on one core.
	$(GO) test $(BENCHFLAGS) ./...

check: lint ## The quick checks before a commit: make lint, then the unit tests (go test -short: no server, no Flink, no Maven); under 2 minutes with a warm build cache.
	$(GO) test -short ./...

lint: ## gofmt, go vet, staticcheck, and go.mod/go.sum tidy (CI runs this before make test).
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt: the files above need formatting'; exit 1; }
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	@$(GO) mod tidy -diff || { echo 'go.mod/go.sum are not tidy: run go mod tidy'; exit 1; }

incidents: ## Regenerate the example incident files under testdata/incidents.
	$(GO) test ./cmd/skewlens -run TestIncidentFiles -update

flink-fixtures: ## Record testdata/flink from a real Flink 2.3 MiniCluster: one ScenarioJob per scenario, its reporters captured (about 30 min; Java 17, Maven).
	bash deploy/flink/record-fixtures.sh
	bash deploy/flink/record-fixtures.sh --scenarios hot_key_onset --duration 200s
	bash deploy/flink/record-fixtures.sh --scenarios checkpoint_timeout --duration 520s
	bash deploy/flink/record-fixtures.sh --scenarios checkpoint_recover --duration 360s
	rm -rf .state/rec-nockpt && bash deploy/flink/record-fixtures.sh --out .state/rec-nockpt --scenarios hot_key --checkpoint-interval 0
	rm -rf testdata/flink/hot_key_no_checkpoints && mv .state/rec-nockpt/hot_key testdata/flink/hot_key_no_checkpoints

# The salting API of `make run` (curl http://$(API)/v1/salting).
API         ?= 127.0.0.1:8080

run: build deps-run ## The whole system on embedded defaults: broker, ClickHouse, simulated incidents, pipeline, salting API (skewlens demo).
	./$(BIN) demo --simulate all --speed 10 --duration $(DURATION) --api-listen $(API)

demo: build ## Replay each simulated incident from files through `skewlens analyze`.
	@./scripts/demo.sh $(BIN)

# The fleet of `make fleet`: its size in subtasks, its simulated time and
# its seed (FLEET_SUBTASKS=25000 FLEET_DURATION=5m make fleet).
FLEET_SUBTASKS ?= 100000
FLEET_DURATION ?= 1m
FLEET_SEED     ?= 1

fleet: build ## Write a simulated fleet (FLEET_SUBTASKS subtasks for FLEET_DURATION) under .state/fleet and run `skewlens analyze` on it: lines/s against wc -l, findings, maximum RSS.
	@./scripts/fleet.sh $(BIN) $(FLEET_SUBTASKS) $(FLEET_DURATION) $(FLEET_SEED)

clean: ## Remove build output and the state of the embedded servers (.state: the local ClickHouse's data).
	rm -rf bin .state
