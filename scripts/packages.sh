#!/usr/bin/env bash
# Installs the Debian packages that make test and make bench need, when one is missing:
# Chromium (browser tests, benchmark 7), bzip2 (gVisor's release archives), a real node's
# containerd, runc, CNI plugins and iptables (realnode.md), curl and redis-tools for the
# images of the in-cluster scripts, python3 for the demo projects' image.
set -euo pipefail
packages="chromium bzip2 containerd runc containernetworking-plugins iptables util-linux curl redis-tools python3"
if ! command -v chromium >/dev/null 2>&1 || ! command -v bzip2 >/dev/null 2>&1 || ! command -v containerd >/dev/null 2>&1 \
  || ! command -v runc >/dev/null 2>&1 || [ ! -x /usr/lib/cni/bridge ] || ! command -v iptables >/dev/null 2>&1 \
  || ! command -v nsenter >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1 || [ ! -x /usr/bin/python3 ]; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  # shellcheck disable=SC2086
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $packages
fi
