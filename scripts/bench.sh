#!/usr/bin/env bash
# Runs the benchmarks whose figures BENCHMARKS.md records. Slow: minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
docker_host="$(bash scripts/setup-docker.sh | sed -n 's/^DOCKER_HOST=//p')"
export DOCKER_HOST="${docker_host:?}" AUTOCODER_DOCKER_BASE_IMAGE="${AUTOCODER_DOCKER_BASE_IMAGE:-autocoder-base:bookworm}"
go test -run '^$' -bench . -skip Cancel -benchtime 50x -count 3 ./bench
# A cancel waits for a job's tests to start sleeping first: fewer, slower ops.
go test -run '^$' -bench Cancel -benchtime 10x -count 3 ./bench
go test -run '^$' -bench . -benchtime 1x ./internal/profile
go test -run '^$' -bench . ./internal/sandbox/bwrap/ ./internal/sandbox/docker/
