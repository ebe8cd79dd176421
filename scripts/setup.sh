#!/usr/bin/env bash
# Installs what autocoder's tests and its embedded defaults need on a fresh
# Debian 12 machine. Idempotent: a second run changes nothing and is fast.
set -euo pipefail

packages=(
  bubblewrap       # the process sandbox
  redis-server     # the Redis cache tests start their own server from it
  python3          # the sandbox interpreter (/usr/bin/python3)
  python3-pytest   # runs generated tests
  python3-pandas   # data tasks and the sales example
  python3-numpy
  python3-jsonschema  # checks what the API example scripts get against docs/schemas
  python3-mypy     # type-checks the Python client (internal/e2e TestPythonClientTypes)
  python3-pip      # installs packages into sandbox environments
  python3-venv
  util-linux       # prlimit
  ca-certificates
  prometheus       # the dashboards test runs it (and promtool) against a live stack
  docker-compose   # validates deploy/compose (the compose config check)
  chromium         # the web UI's browser test (internal/e2e TestWebUI), headless
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Fail loudly here rather than let a test skip.
command -v go >/dev/null || { echo "setup: Go is not installed (need 1.26+)"; exit 1; }
command -v bwrap >/dev/null || { echo "setup: bwrap missing after install"; exit 1; }
command -v redis-server >/dev/null || { echo "setup: redis-server missing after install"; exit 1; }
command -v chromium >/dev/null || { echo "setup: chromium missing after install"; exit 1; }
/usr/bin/python3 -c 'import pytest, pandas' || { echo "setup: /usr/bin/python3 lacks pytest or pandas"; exit 1; }
command -v prometheus >/dev/null && command -v promtool >/dev/null || { echo "setup: prometheus missing after install"; exit 1; }
command -v docker-compose >/dev/null || { echo "setup: docker-compose missing after install"; exit 1; }
# The message API's tests check what Python gets against docs/schemas.
/usr/bin/python3 -c 'import jsonschema' || { echo "setup: /usr/bin/python3 lacks jsonschema"; exit 1; }
bwrap --unshare-all --die-with-parent --ro-bind / / true || { echo "setup: bubblewrap cannot create a sandbox here"; exit 1; }
# golangci-lint checks the house rules (.golangci.yml); a pinned version,
# built from the Go module proxy into GOBIN once, then reused.
golangci_version=v2.15.0
gobin="$(go env GOBIN)"; gobin="${gobin:-$(go env GOPATH)/bin}"
if ! "$gobin/golangci-lint" version 2>/dev/null | grep -q "version ${golangci_version#v} "; then
  echo "setup: installing golangci-lint $golangci_version (a Go tool; takes a minute or two once)"
  GOFLAGS= go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$golangci_version"
fi
# The nats CLI, pinned: the message API's tests run docs/api.md's examples with it.
natscli_version=v0.5.1
if ! "$gobin/nats" --version 2>/dev/null | grep -qx "$natscli_version"; then
  echo "setup: installing the nats CLI $natscli_version (a Go tool; takes a few minutes once)"
  GOFLAGS= go install "github.com/nats-io/natscli/nats@$natscli_version"
fi
# The Docker sandbox backend's engine (podman's Docker-compatible service)
# and its offline base image; prints the DOCKER_HOST to use.
bash "$(dirname "$0")/setup-docker.sh" >/dev/null
echo "setup: ok"
