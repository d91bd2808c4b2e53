#!/usr/bin/env bash
# Runs scripts/onnx_node_tests.py (the ONNX test suite's node tests through the cpu runtime) on
# a sample; skipped (77) without /usr/bin/python3 or the test data.
#   onnx_node_tests.sh PLANNER SOURCE_DIR [script options]
set -uo pipefail
planner=$1 source=$2
shift 2
[ -x /usr/bin/python3 ] || { echo "SKIPPED: /usr/bin/python3 is absent"; exit 77; }
exec /usr/bin/python3 "$source/scripts/onnx_node_tests.py" --planner "$planner" "$@"
