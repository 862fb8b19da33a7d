#!/usr/bin/env bash
# Install the Debian packages etkit needs to build and test, if any is missing.
# Runs as root (apt-get) on a fresh Debian machine; does nothing when all are present.
set -euo pipefail
PKGS="build-essential cmake pkg-config libprotobuf-c-dev protobuf-c-compiler zlib1g-dev
      libjansson-dev libyaml-dev libcmocka-dev clang libclang-rt-14-dev
      libopenmpi-dev openmpi-bin python3-dev python3-cffi python3-pytest chromium python3-torch
      netpipe-openmpi hpcc"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "installing:$missing"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq $missing
fi
