#!/usr/bin/env bash
# The README's first command: runs the sales example end to end on this
# machine, with a scripted model when no OPENAI_API_KEY is set. On a fresh
# Debian machine with nothing but Go it first installs what the embedded
# defaults need (the process sandbox: bubblewrap, and Debian's python3 with
# pytest and pandas), saying so; then it builds and runs
#
#   go run ./cmd/submit --local examples/sales/job.yaml [ARGS...]
#
# Extra arguments go to submit (--json, --out DIR). Nothing else is
# installed: no Redis, no Docker, no NATS server (the run embeds them).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "quickstart: $*" >&2; }

command -v go >/dev/null || { say "Go is not on PATH: install Go 1.26 or newer first, then run this again"; exit 1; }

# What the process sandbox needs, as Debian packages, and how to tell each
# is there. pandas: the sales example's script uses it, and no package
# index is needed when Debian already has it.
packages=(bubblewrap python3 python3-pytest python3-pandas)
have_all() {
  command -v bwrap >/dev/null && [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import pytest, pandas' 2>/dev/null
}

if ! have_all; then
  if ! command -v apt-get >/dev/null; then
    say "this machine lacks the process sandbox's tools and has no apt-get: install bubblewrap and"
    say "Python 3 with pytest and pandas at /usr/bin/python3 (or set AUTOCODER_PYTHON), then run this again"
    exit 1
  fi
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { say "not root and no sudo: as root, run  apt-get install ${packages[*]}"; exit 1; }
    SUDO="sudo"
  fi
  say "installing the process sandbox's Debian packages: ${packages[*]}${SUDO:+ (with sudo)}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
  have_all || { say "still missing after the install: bwrap, or pytest/pandas for /usr/bin/python3"; exit 1; }
fi

# bubblewrap needs user namespaces (or, as root, mount namespaces): say so
# here, plainly, rather than from inside the first job.
if ! bwrap --unshare-all --die-with-parent --ro-bind / / true 2>/dev/null; then
  say "bubblewrap is installed but cannot make a sandbox here: enable unprivileged user namespaces"
  say "(sysctl kernel.unprivileged_userns_clone=1), or, in a container, run it with --privileged"
  exit 1
fi

say "building and running the sales example: submit --local examples/sales/job.yaml $*"
say "(the first build compiles every dependency and takes a few minutes; later runs start in seconds)"
# Built, then run in this shell's place: `go run` would turn submit's exit
# codes (2 a bad job, 3 no infrastructure: docs/usage.md) into 1.
bin="${TMPDIR:-/tmp}/autocoder-quickstart"
mkdir -p "$bin"
go build -o "$bin/submit" ./cmd/submit
exec "$bin/submit" --local examples/sales/job.yaml "$@"
