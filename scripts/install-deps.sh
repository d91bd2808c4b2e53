#!/usr/bin/env bash
# Installs the Debian 12 packages the planner builds and tests with; a no-op when present.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config
  libcli11-dev nlohmann-json3-dev libonnx-dev libprotobuf-dev protobuf-compiler
  libfmt-dev libspdlog-dev libboost-graph-dev doctest-dev
  libopenblas-dev libbenchmark-dev
  libopenmpi-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
