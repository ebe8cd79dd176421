#!/usr/bin/env bash
# Puts the Go binaries the offline images need in deploy/compose/offline/bin:
# autocoder's four, and nats-server at the version go.mod pins (from the Go
# module cache). Run from anywhere; needs Go, no registry.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "${AUTOCODER_SRC:-$here/../../..}" # the repository (a copy of deploy/compose elsewhere names it)
mkdir -p "$here/bin"
CGO_ENABLED=0 go build -trimpath -o "$here/bin/" ./cmd/...
CGO_ENABLED=0 go build -trimpath -o "$here/bin/" github.com/nats-io/nats-server/v2
ls "$here/bin"
