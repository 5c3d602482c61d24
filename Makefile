# runr regions console. Two commands on a fresh Debian machine with Go: `make run`, `make test`.
SHELL := /bin/bash
# The version runr reports and the tag of its images (a release tag v1.2.3 gives 1.2.3).
VERSION ?= $(shell (git describe --tags --always --dirty 2>/dev/null || echo dev) | sed 's/^v//')
LDFLAGS := -X main.version=$(VERSION)
# Screenshots of the browser tests land here (not committed).
ARTIFACTS ?= $(CURDIR)/test-artifacts
export ARTIFACTS

.PHONY: build images version run test test-real upgrade-test vet generate templ css check-generated sandbox sandbox-stop sandbox-reset bench clean

build:
	go build -ldflags "$(LDFLAGS)" -o bin/runr .

## images: the console's OCI images (console and agent, tagged $(VERSION)) as an OCI image
## layout in bin/images, built without a container engine; REGISTRY=<repository> pushes them
## too (a release: REGISTRY=ghcr.io/brf-tech/runr, after `docker login ghcr.io` or with
## ~/.docker/config.json credentials).
images:
	go run ./images/cmd/build-images --version $(VERSION) --out bin/images $(if $(REGISTRY),--push $(REGISTRY))

## version: the version runr is stamped with, and its images' tag.
version:
	@echo $(VERSION)

## run: start a private PostgreSQL (unless DATABASE_URL is set), migrate, create the first
## administrator, and serve on :8080 (RUNR_ADDR overrides).
run: build
	scripts/run.sh

## test: vet, regenerate templ and CSS and fail on a diff, then every test (PostgreSQL,
## simulated clusters and Chromium are installed and started as needed).
test:
	scripts/test.sh

## test-real: make test, building first what the real-node data path runs when it is not
## built yet (Traefik, the Knative Operator and Serving from their Go modules, about 20
## minutes once per machine).
test-real:
	RUNR_TEST_REAL=1 scripts/test.sh

## upgrade-test: the previous release tag creates data through its API; this checkout
## migrates and takes over while a prober calls the API every 100 ms (also in `make test`).
upgrade-test:
	scripts/upgrade-test.sh

vet:
	go vet ./...

generate: templ css

templ:
	go tool templ generate -path views

node_modules: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch node_modules

css: node_modules
	npx tailwindcss -i static/src/app.css -o static/app.css --minify
	cp node_modules/htmx.org/dist/htmx.min.js static/htmx.min.js
	cp node_modules/htmx-ext-ws/dist/ws.min.js static/ws.min.js

## check-generated: regenerate and fail when the committed files differ.
check-generated: generate
	@git diff --exit-code --stat -- views static || { echo "Generated files are out of date: run 'make generate' and commit." >&2; exit 1; }

## sandbox: one simulated cluster (1 control plane, 2 workers) and the stand-in chart repository,
## kept across sandbox-stop and sandbox (same ports and data); REALNODE=1 adds a real node that runs the console's images of this checkout (realnode.md).
sandbox:
	go build -o bin/sandbox ./testcluster/cmd/sandbox
	bin/sandbox start $(if $(REALNODE),--real-node)

sandbox-stop:
	go build -o bin/sandbox ./testcluster/cmd/sandbox
	bin/sandbox stop

## sandbox-reset: forget the stopped sandbox's cluster (the next `make sandbox` is a new one).
sandbox-reset:
	go build -o bin/sandbox ./testcluster/cmd/sandbox
	bin/sandbox reset

## bench: measure and write bench/RESULTS.md (never part of `make test`).
bench: build
	scripts/bench.sh

clean:
	rm -rf bin test-artifacts
