#!/usr/bin/env bash
# Makes the root filesystem of compass-base/debian (Debian bookworm, minbase) in DIR from
# Debian's own packages, for `docker import` (scripts/test-containers). No image registry is
# needed: debootstrap fetches the packages from an apt mirror.
# Usage: debian-rootfs.sh DIR [MIRROR [SECURITY_MIRROR]]
set -euo pipefail
dir="$1"
mirror="${2:-http://deb.debian.org/debian}"
security="${3:-${mirror%/debian}/debian-security}"
suite=bookworm

debootstrap --variant=minbase "$suite" "$dir" "$mirror" >&2

# What Debian's own container images add to a debootstrap (their "docker" tweaks): packages
# installed later start no services, leave no documentation, and apt keeps no caches.
cat > "$dir/usr/sbin/policy-rc.d" <<'POLICY'
#!/bin/sh
# Containers run no init: packages must not try to start services.
exit 101
POLICY
chmod 755 "$dir/usr/sbin/policy-rc.d"
cat > "$dir/etc/dpkg/dpkg.cfg.d/compass-slim" <<'DPKG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
DPKG
cat > "$dir/etc/apt/apt.conf.d/compass-slim" <<'APT'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
APT
cat > "$dir/etc/apt/sources.list" <<SOURCES
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security $suite-security main
SOURCES

# What debootstrap leaves behind that an image does not need.
rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/cache/apt/*.bin "$dir"/var/lib/apt/lists/* \
  "$dir"/var/log/* "$dir"/tmp/* "$dir"/usr/share/man/* "$dir"/usr/share/info/*
find "$dir/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$dir/usr/share/doc" -mindepth 1 -type d -empty -delete
find "$dir/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
