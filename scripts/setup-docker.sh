#!/usr/bin/env bash
# Gives the Docker sandbox backend (internal/sandbox/docker) an engine and a
# base image on a fresh Debian 12 machine, with no registry reachable:
#
#   - podman with runc (crun fails on hybrid cgroup hosts), and debootstrap;
#   - `podman system service` answering the Docker Engine API on
#     /run/autocoder/podman.sock (started in the background if not answering);
#   - the base image autocoder-base:bookworm (Debian minbase with python3,
#     pytest and pip), made by debootstrap and imported, only if missing. The
#     rootfs tarball is cached under /var/cache/autocoder, so re-imports are
#     quick.
#
# Idempotent and fast when already done. Prints the DOCKER_HOST to use on
# its last line (DOCKER_HOST=unix:///run/autocoder/podman.sock); `source` it
# or eval that line. A Docker Engine already answering on DOCKER_HOST is
# used as it is (the base image is still imported into it if missing).
set -euo pipefail

SOCK_DIR=/run/autocoder
SOCK="$SOCK_DIR/podman.sock"
CACHE_DIR=/var/cache/autocoder
BASE_IMAGE="${AUTOCODER_DOCKER_BASE_IMAGE:-autocoder-base:bookworm}"
SUITE=bookworm
MIRROR="${AUTOCODER_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# What the base image holds: pytest runs generated tests, pip installs
# packages into derived images. Bump ROOTFS_VERSION when this list changes.
INCLUDE=python3,python3-pytest,python3-pip
ROOTFS_VERSION=1
TARBALL="$CACHE_DIR/rootfs-$SUITE-v$ROOTFS_VERSION.tar"

SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
log() { echo "setup-docker: $*" >&2; }

ping_engine() { # $1: unix socket path
  [ -S "$1" ] && curl -sf --max-time 2 --unix-socket "$1" http://d/_ping >/dev/null 2>&1
}

# dnsname: compose services find each other by name on Podman's CNI networks.
packages=(podman runc debootstrap curl uidmap containernetworking-plugins golang-github-containernetworking-plugin-dnsname iptables)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# runc, not crun: crun cannot set up containers on hosts with hybrid
# cgroups. Only a config we wrote, or none, is changed.
CONF=/etc/containers/containers.conf
if [ ! -f "$CONF" ] || grep -q '^# autocoder' "$CONF"; then
  want=$'# autocoder: scripts/setup-docker.sh\n[engine]\nruntime = "runc"'
  if [ "$(cat "$CONF" 2>/dev/null)" != "$want" ]; then
    $SUDO mkdir -p /etc/containers
    printf '%s\n' "$want" | $SUDO tee "$CONF" >/dev/null
  fi
elif ! grep -q 'runtime *= *"runc"' "$CONF"; then
  log "warning: $CONF exists and does not select runc; leaving it as it is"
fi

# The engine: a Docker Engine already on DOCKER_HOST, else podman's service.
host_sock=""
case "${DOCKER_HOST:-}" in
  unix://*) host_sock="${DOCKER_HOST#unix://}" ;;
esac
if [ -n "$host_sock" ] && ping_engine "$host_sock"; then
  SOCK="$host_sock"
elif ! ping_engine "$SOCK"; then
  $SUDO mkdir -p "$SOCK_DIR"
  $SUDO rm -f "$SOCK"
  log "starting podman system service on $SOCK"
  # setsid+nohup: the service outlives this script and its terminal. It
  # runs from /, not from the caller's directory: conmon cannot start a
  # container once the service's working directory is gone (a removed
  # checkout), and says only "write child: broken pipe".
  (cd / && exec $SUDO setsid nohup podman system service --time=0 "unix://$SOCK") \
    >"$SOCK_DIR/podman-service.log" 2>&1 </dev/null &
  for _ in $(seq 1 100); do
    ping_engine "$SOCK" && break
    sleep 0.1
  done
  ping_engine "$SOCK" || { log "podman service did not answer; see $SOCK_DIR/podman-service.log"; exit 1; }
fi
export DOCKER_HOST="unix://$SOCK"

image_exists() {
  curl -sf --max-time 10 --unix-socket "$SOCK" "http://d/images/$1/json" >/dev/null 2>&1
}

if ! image_exists "$BASE_IMAGE"; then
  if [ "$BASE_IMAGE" != "autocoder-base:bookworm" ]; then
    log "base image $BASE_IMAGE is missing: pull it into the engine (docker pull $BASE_IMAGE)"
    exit 1
  fi
  $SUDO mkdir -p "$CACHE_DIR"
  if [ ! -s "$TARBALL" ]; then
    root="$(mktemp -d "$CACHE_DIR/rootfs.XXXXXX")"
    trap '$SUDO rm -rf "$root"' EXIT
    log "debootstrap $SUITE ($INCLUDE) into $root (about a minute)"
    start=$(date +%s)
    $SUDO debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$root" "$MIRROR" >"$CACHE_DIR/debootstrap.log" 2>&1 ||
      { log "debootstrap failed; see $CACHE_DIR/debootstrap.log"; tail -20 "$CACHE_DIR/debootstrap.log" >&2; exit 1; }
    # A smaller image: no package lists, caches or docs.
    $SUDO rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
      "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/*
    $SUDO tar -C "$root" --numeric-owner -cf "$TARBALL.tmp" .
    $SUDO mv "$TARBALL.tmp" "$TARBALL"
    $SUDO rm -rf "$root"
    trap - EXIT
    log "rootfs ready in $(($(date +%s) - start))s: $TARBALL"
  fi
  log "importing $TARBALL as $BASE_IMAGE"
  curl -sf --max-time 600 --unix-socket "$SOCK" -X POST -H 'Content-Type: application/x-tar' \
    -T "$TARBALL" \
    "http://d/images/create?fromSrc=-&repo=$BASE_IMAGE" >/dev/null ||
    { log "importing the base image failed"; exit 1; }
  image_exists "$BASE_IMAGE" || { log "base image $BASE_IMAGE missing after import"; exit 1; }
fi

log "ok: engine on $DOCKER_HOST, base image $BASE_IMAGE"
echo "DOCKER_HOST=$DOCKER_HOST"
