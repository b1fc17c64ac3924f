#!/usr/bin/env bash
# make test-fresh: what a newcomer meets on a brand-new Debian 12 machine.
#
# A minimal Debian 12 root (mmdebstrap --variant=minbase, plus make, git and ca-certificates),
# cached as a tarball, is unpacked afresh; the checkout's HEAD is cloned into it; then, chrooted
# in a private mount namespace with /proc, /sys and /dev:
#   1. `make run` as a non-root user must print the one apt-get command, exit 2 and leave no .venv;
#   2. `make deps` as root installs Debian's packages, then the virtualenv;
#   3. the unit tests run (FRESH_TESTS selects them; default: -m "not vm").
# With FRESH_RUN=1 it goes on as a user would: `make run`, a second `make run` (resumable), then
# `make test`. FRESH_REV=REV tests that commit instead of HEAD. Debian's .debs are kept between runs in the cache, next to the tarball.
# Needs root (chroot, mounts). Exits 0 when every step did what it should, 1 when one did not.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cache=${PLUGPULL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/plugpull}/fresh-root
tarball=$cache/debian12-minbase.tar
tests=${FRESH_TESTS:-"-m 'not vm'"}

step() { printf '\n== %s (%s)\n' "$1" "$(date +%T)"; }
fail() { echo "test-fresh: FAILED: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || { echo "test-fresh needs root (chroot and mounts)" >&2; exit 2; }
if ! command -v mmdebstrap >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
fi

mkdir -p "$cache/debs"
if [ ! -f "$tarball" ]; then
  step "building the minimal root"
  t0=$SECONDS
  mmdebstrap --quiet --format=tar --variant=minbase --include=make,git,ca-certificates \
    bookworm "$tarball.partial"
  mv "$tarball.partial" "$tarball"
  echo "root built in $((SECONDS - t0)) s"
fi

root=$(mktemp -d /var/tmp/plugpull-fresh.XXXXXX)
cleanup() { rm -rf --one-file-system "$root"; }
trap cleanup EXIT

step "unpacking the root"
tar -xf "$tarball" -C "$root"
# A new machine here reaches the registries through these; without them pip fails on certificates.
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
[ -d /usr/local/share/ca-certificates ] && cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
[ -f /etc/pip.conf ] && cp /etc/pip.conf "$root/etc/pip.conf"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
rev=$(git -C "$here" rev-parse --short "${FRESH_REV:-HEAD}")
git clone -q "$here" "$root/src/plugpull"
git -C "$root/src/plugpull" checkout -q "$rev"
echo "cloned $rev into the root"

# The steps, run inside the root. Each prints what it checks; the first failure stops them.
cat >"$root/fresh-steps.sh" <<'STEPS'
set -euo pipefail
step() { printf '\n== %s (%s)\n' "$1" "$(date +%T)"; }
fail() { echo "test-fresh: FAILED: $*" >&2; exit 1; }
cd /src/plugpull

step "make run as a non-root user"
useradd -m newcomer
chown -R newcomer /src/plugpull
set +e
out=$(su newcomer -c 'make run' 2>&1); rc=$?
set -e
echo "$out"
[ "$rc" = 2 ] || fail "make run as a user exited $rc, not 2"
[ "$(grep -c 'apt-get install' <<<"$out")" = 1 ] || fail "make run as a user did not print one apt-get command"
[ ! -e .venv ] || fail "make run as a user left .venv behind"
[ -z "$(git status --porcelain --ignored)" ] || fail "make run as a user left files behind: $(git status --porcelain --ignored)"
chown -R root /src/plugpull

step "make deps as root"
t0=$SECONDS
make deps
echo "make deps: $((SECONDS - t0)) s"
t0=$SECONDS
make deps >/dev/null
echo "make deps again: $((SECONDS - t0)) s"

step "unit tests"
t0=$SECONDS
eval ".venv/bin/python -m pytest -q -p no:cacheprovider $FRESH_TESTS"
echo "unit tests: $((SECONDS - t0)) s"

if [ "${FRESH_RUN:-0}" = 1 ]; then
  step "make run"
  t0=$SECONDS; make run; echo "make run: $((SECONDS - t0)) s"
  step "make run again (resumed)"
  t0=$SECONDS; make run >/dev/null; echo "make run again: $((SECONDS - t0)) s"
  step "make test"
  make test
fi
echo; echo "test-fresh: passed"
STEPS

step "chroot: the newcomer's steps"
# A private mount namespace: the mounts go with it, whatever happens to this script.
unshare --mount --propagation private -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  TERM=dumb LANG=C.UTF-8 FRESH_TESTS="$tests" FRESH_RUN="${FRESH_RUN:-0}" ROOT="$root" \
  DEBS="$cache/debs" bash -c '
    set -e
    # The root a mount point, as on a machine: libvirt makes its mount propagation private.
    mount --bind "$ROOT" "$ROOT"
    mount -t proc proc "$ROOT/proc"
    mount --rbind /sys "$ROOT/sys"
    mount --rbind /dev "$ROOT/dev"
    # Debian'"'"'s udev postinst (systemd-tmpfiles, static-nodes-permissions.conf) gives /dev/kvm
    # and the like to the root'"'"'s own kvm, render and sgx groups, whose ids are not the host'"'"'s:
    # through the bound /dev it once gave the host'"'"'s /dev/kvm to group 103 (ssl-cert here), so
    # that libvirt'"'"'s QEMU user could no longer open it. Those nodes get private copies here.
    for node in /dev/kvm /dev/dri/renderD* /dev/sgx_*; do
      [ -c "$node" ] || continue
      copy="$ROOT/.host-nodes/$(echo "${node#/dev/}" | tr / _)"
      mkdir -p "$ROOT/.host-nodes"
      mknod -m "$(stat -c %a "$node")" "$copy" c "$((0x$(stat -c %t "$node")))" "$((0x$(stat -c %T "$node")))"
      chown "$(stat -c %u:%g "$node")" "$copy"
      mount --bind "$copy" "$ROOT$node"
    done
    mount --bind "$DEBS" "$ROOT/var/cache/apt/archives"
    mkdir -p "$ROOT/var/cache/apt/archives/partial"
    # The root keeps the .debs it fetched, so the next run installs them from the cache.
    echo "Binary::apt::APT::Keep-Downloaded-Packages \"true\";" >"$ROOT/etc/apt/apt.conf.d/99keep"
    rm -f "$ROOT/etc/apt/apt.conf.d/docker-clean"
    exec chroot "$ROOT" bash /fresh-steps.sh
  ' || fail "a step in the fresh root failed (above)"
