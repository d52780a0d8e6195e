# skewlens build entry points. `make help` lists them.
GO          ?= go
BIN         := bin/skewlens
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Benchmarks run on one core (-cpu 1), as the README figures are per core.
BENCHFLAGS  ?= -run '^$$' -bench . -benchmem -cpu 1 -count 1

.PHONY: help build test test-fuzz bench lint run incidents clean

help: ## Show the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## Build bin/skewlens.
	$(GO) build -o $(BIN) ./cmd/skewlens

test: ## Vet and run every test (the README's test command; CI runs it).
	$(GO) vet ./...
	$(GO) test -count=1 ./...

test-fuzz: ## Run each fuzz target for 10 s.
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test $$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime 10s || exit 1; \
	  done; \
	done

bench: ## Run the benchmarks on one core.
	$(GO) test $(BENCHFLAGS) ./...

lint: ## go vet and staticcheck.
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

incidents: build ## Regenerate the example incident files under testdata/incidents.
	$(GO) test ./cmd/skewlens -run TestIncidentFiles -update

run: build ## Simulate each incident and show what skewlens finds.
	@./scripts/demo.sh $(BIN)

clean: ## Remove build output.
	rm -rf bin
