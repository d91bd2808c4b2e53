#!/usr/bin/env bash
# The report page in a real browser: `planner plan --report` on the example MLP, the page opened
# in headless Chromium, a screenshot taken and checked not to be blank (ink, colours, and the
# first GPUs' colours, which only the pictures use). Skips (exit 77) without chromium or python3.
#
# usage: report_screenshot.sh PLANNER SOURCE_DIR
set -uo pipefail
planner=$1 source_dir=$2
browser=""
for candidate in chromium chromium-browser google-chrome; do
  if command -v "$candidate" > /dev/null; then browser=$(command -v "$candidate"); break; fi
done
if [ -z "$browser" ]; then
  echo "SKIPPED: no chromium on PATH (scripts/install-deps.sh installs Debian's chromium package)"
  exit 77
fi
if ! python3 -c 'import zlib' 2> /dev/null; then
  echo "SKIPPED: python3 with zlib is needed to read the screenshot"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

"$planner" plan "$source_dir/examples/mlp.onnxtxt" --gpus 4 --all-gpus --no-progress -o "$tmp/plan.json" \
  --report "$tmp/report" > "$tmp/plan.out" 2>&1 || { cat "$tmp/plan.out"; fail "planner plan --report"; }
for f in index.html frontier.svg tensors.svg timeline.svg trace.json plan.json; do
  [ -s "$tmp/report/$f" ] || fail "the report has no $f"
done
# The pictures are well-formed XML, the trace well-formed JSON.
python3 - "$tmp/report" << 'PY' || fail "a report file does not parse"
import json, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
for f in ("frontier.svg", "tensors.svg", "timeline.svg"):
    ET.parse(f"{d}/{f}")
json.load(open(f"{d}/trace.json"))
json.load(open(f"{d}/plan.json"))
PY

# Chromium wants a writable home and profile; a private one keeps the test hermetic.
HOME="$tmp" timeout 180 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --no-first-run --user-data-dir="$tmp/profile" --window-size=1280,2000 \
  --screenshot="$tmp/shot.png" "file://$tmp/report/index.html" > "$tmp/chromium.log" 2>&1
status=$?
if [ ! -s "$tmp/shot.png" ]; then
  tail -20 "$tmp/chromium.log"
  fail "chromium wrote no screenshot (exit $status)"
fi
# GPU 0's and GPU 1's colours appear only in the pictures (tiles, legends, frontier series).
python3 "$source_dir/tests/cli/png_check.py" "$tmp/shot.png" --min-ink 0.02 --min-colours 16 \
  --expect '#1f77b4' '#ff7f0e' || fail "the screenshot of the report looks blank"
echo "report screenshot: not blank"
