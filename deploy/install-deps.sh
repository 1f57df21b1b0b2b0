#!/usr/bin/env bash
# Installs the Debian packages escher builds and tests with, when they are missing.
set -euo pipefail
# gnuplot-nox: `ekya plot` writes svg and png; Debian 12's gnuplot-nox has both (its
# pngcairo terminal comes with its cairo/pango dependencies), no X or Qt needed.
# clang, libclang-rt-14-dev: the fuzz targets (make fuzz, make test's test-fuzz); the
# second holds libFuzzer (-fsanitize=fuzzer); clang-14 brings it too, named for clarity.
# chromium, python3-websocket: test_dashboard.sh loads the dashboard in headless Chromium
# and drives it over the DevTools protocol (tests/integration/dashboard_cdp.py).
pkgs=(build-essential cmake pkg-config libgrpc-dev libprotobuf-c-dev protobuf-c-compiler
      libhiredis-dev redis-server libev-dev libjemalloc-dev libcmocka-dev libjansson-dev
      iproute2 procps openssl libssl-dev tar util-linux python3 zlib1g-dev dataset-fashion-mnist gnuplot-nox
      help2man dpkg-dev file libyaml-dev openssh-client openssh-server
      libmicrohttpd-dev curl prometheus clang libclang-rt-14-dev chromium python3-websocket)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
