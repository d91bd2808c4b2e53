#!/usr/bin/env bash
# Makes (once) the Python virtual environment the cross-check tests use and prints its python:
# onnxruntime's CPU build, a current onnx (whose onnx.reference evaluator Debian's 1.12 lacks)
# and Hugging Face transformers, from PyPI, beside Debian's python3-torch and numpy (--system-site-packages). The
# planner itself never needs it. Exit 77, saying why, where it cannot be made (no python3-venv,
# no network): the tests that need it then skip.
#
#   scripts/python_env.sh [VENV_DIR]    (default: build/venv)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-${PLANNER_VENV:-$root/build/venv}}
# Versions pinned so a test means the same thing on every machine; both have wheels for
# Debian 12's Python 3.11 and accept its numpy 1.24. Not onnxruntime 1.20: its Pad/AveragePool
# fusion drops the padding from the average (microsoft/onnxruntime#22177, fixed by #23190 in
# 1.21), which Inception-v3's Pad -> AveragePool shows as a 26% difference.
packages=(onnxruntime==1.22.0 onnx==1.17.0)
# Hugging Face transformers (the last release that runs on Debian's torch 1.13): the
# architectures users export (scripts/export_hf_models.py). Optional: without it the
# environment still serves, and the tests that need it say so.
optional=(transformers==4.36.2)
stamp="$venv/.planner-packages"
wanted="${packages[*]} ${optional[*]}"
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ]; then
  echo "$venv/bin/python"; exit 0
fi
python=/usr/bin/python3
[ -x $python ] || { echo "SKIPPED: $python is absent" >&2; exit 77; }
# A lock, so two tests starting together do not build the environment twice at once.
mkdir -p "$(dirname "$venv")"
exec 9> "$venv.lock"
flock 9
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ]; then
  echo "$venv/bin/python"; exit 0
fi
log=$(mktemp); trap 'rm -f "$log"' EXIT
if ! $python -m venv --system-site-packages "$venv" > "$log" 2>&1; then
  echo "SKIPPED: cannot make a virtual environment at $venv: $(tail -1 "$log")" >&2; exit 77
fi
if ! "$venv/bin/pip" install --disable-pip-version-check -q "${packages[@]}" > "$log" 2>&1; then
  echo "SKIPPED: cannot install ${packages[*]} from PyPI: $(tail -1 "$log")" >&2; exit 77
fi
if ! "$venv/bin/pip" install --disable-pip-version-check -q "${optional[@]}" > "$log" 2>&1; then
  echo "note: cannot install ${optional[*]} from PyPI: $(tail -1 "$log")" >&2
fi
echo "$wanted" > "$stamp"
echo "$venv/bin/python"
