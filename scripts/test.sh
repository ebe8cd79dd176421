#!/usr/bin/env bash
# The test command: set up the machine, then run every test with the race
# detector, the end-to-end tests included. A missing dependency fails the
# run; no suite skips.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export CI="${CI:-true}"
go vet ./...
go test -race -count=1 -timeout 40m ./... "$@"
