# memdoctor build and test entry points. `make test` is the one command that
# runs every test on a fresh Debian machine (it installs what the tests need).

GO      ?= go
OUT     ?= memdoctor
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# The build date; SOURCE_DATE_EPOCH (reproducible builds) fixes it.
BUILD_DATE ?= $(shell date -u -d @$${SOURCE_DATE_EPOCH:-$$(date +%s)} +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.buildDate=$(BUILD_DATE)

# memdoctor_VERSION_ARCH.deb in DEBDIR, with dpkg-deb (scripts/build-deb.sh).
DEBDIR  ?= .

.PHONY: build deb test test-short test-deps checks cross lint lint-install bench fuzz clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(OUT) ./cmd/memdoctor

deb:
	GO=$(GO) scripts/build-deb.sh $(DEBDIR)

# The static checks (vet, the other platforms, lint) run beside the tests
# from cmd/memdoctor's on, at the idle scheduling class, on the CPU time the
# tests leave (scripts/go-test.sh, MEMDOCTOR_TEST_BESIDE); gofmt first, at
# once.
test: test-deps
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	GO=$(GO) MEMDOCTOR_TEST_BESIDE='$(MAKE) --no-print-directory checks' scripts/go-test.sh

checks: cross
	$(GO) vet ./...
	@lint=$$(command -v golangci-lint || ls $$($(GO) env GOPATH)/bin/golangci-lint 2>/dev/null); \
	  if [ -n "$$lint" ]; then echo "$$lint run ./..."; $$lint run ./...; \
	  else echo "golangci-lint not installed: lint skipped (make lint-install)"; fi

# The inner loop: every package, the slowest tests skipped (-short); no
# installs, no lint. `make test` is what decides.
test-short:
	$(GO) vet ./...
	$(GO) test -short -count=1 -timeout 10m ./...

test-deps:
	@scripts/install-test-deps.sh
	@command -v golangci-lint >/dev/null 2>&1 || [ -x "$$($(GO) env GOPATH)/bin/golangci-lint" ] || \
	  { echo "installing golangci-lint v2.15.0 (make lint-install)" >&2; $(MAKE) --no-print-directory lint-install || \
	    echo "golangci-lint could not be installed: lint will be skipped" >&2; }

# The other platforms compile (tests included for Linux arm64): code that
# builds only on this machine's kind fails here, not on a user's.
cross:
	GOOS=linux GOARCH=arm64 $(GO) vet ./...
	GOOS=darwin GOARCH=arm64 $(GO) build ./...

lint:
	golangci-lint run ./...

lint-install:
	$(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

bench:
	bench/run.sh

fuzz:
	scripts/fuzz-all.sh 20s

clean:
	rm -f memdoctor memdoctor_*.deb
