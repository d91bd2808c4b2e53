#!/usr/bin/env bash
# Installs the Debian 12 packages the planner builds and tests with; a no-op when present.
# clang and libclang-rt-14-dev (libFuzzer and the sanitizer runtimes) are for scripts/fuzz.sh
# and scripts/sanitize.sh, clang-format for the formatting check; the planner itself builds
# with gcc.
# Optional packages (libjemalloc-dev, the faster allocator the build links when present;
# chromium, for the test that screenshots a report; python3-torch,
# -torchvision and -onnx, which export the accuracy benchmark's models and PaSE's workloads)
# are tried after the required ones; if they cannot be installed the script says so and still
# succeeds, and the tests that need them skip.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config
  libcli11-dev nlohmann-json3-dev libonnx-dev libprotobuf-dev protobuf-compiler
  libfmt-dev libspdlog-dev libboost-graph-dev doctest-dev
  libopenblas-dev libbenchmark-dev
  libopenmpi-dev
  clang libclang-rt-14-dev clang-format
)
optional=(libjemalloc-dev chromium python3-torch python3-torchvision python3-onnx libonnx-testdata)
missing_of() {
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
mapfile -t missing < <(missing_of "${packages[@]}")
mapfile -t missing_optional < <(missing_of "${optional[@]}")
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
updated=0
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq && updated=1
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ ${#missing_optional[@]} -gt 0 ]; then
  echo "installing (optional): ${missing_optional[*]}"
  if ! { [ $updated = 1 ] || $SUDO apt-get update -qq; } ||
     ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing_optional[@]}"; then
    echo "note: could not install ${missing_optional[*]}; the tests that need them will skip"
  fi
fi
