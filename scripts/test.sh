#!/usr/bin/env bash
# The test command: set up the machine, then run every test with the race
# detector, the end-to-end tests included. A missing dependency fails the
# run; no suite skips.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The Docker backend's tests run against the engine setup-docker.sh started
# (fast now: it is already up); they fail, never skip, without one.
docker_host="$(bash scripts/setup-docker.sh | sed -n 's/^DOCKER_HOST=//p')"
export DOCKER_HOST="${docker_host:?setup-docker.sh printed no DOCKER_HOST}"
export AUTOCODER_DOCKER_BASE_IMAGE="${AUTOCODER_DOCKER_BASE_IMAGE:-autocoder-base:bookworm}"
# CI sets CI=true: then a missing dataset (../shared/datasets) fails its
# test; on a fresh clone outside CI that one test says so and passes.
go vet ./...
gobin="$(go env GOBIN)"; gobin="${gobin:-$(go env GOPATH)/bin}"
"$gobin/golangci-lint" run ./...
# Benchmarks once each, so they keep building and running; figures come
# from scripts/bench.sh (BENCHMARKS.md), not from this smoke run.
go test -run '^$' -bench . -benchtime 1x ./bench
# The decoders' fuzz targets, a few seconds each (scripts/fuzz.sh).
bash scripts/fuzz.sh
go test -race -count=1 -timeout 40m ./... "$@"
