#!/usr/bin/env bash
# The launcher's --report against the compiled plan (issue 15), on a shrunk shared model
# (shrink_maps.sh) planned with dp and frontier on 4 GPUs, training: every rank of the cpu
# launcher, run for 3 steps with --poison, must allocate nothing after the first step, wait for
# the device at most once a step, run no kernel through a host fallback, and hold exactly the
# memory the manifest predicts for it (within 1%: the arena of codegen/memory_plan.h), and touch
# that much: the highest arena byte the step's kernels wrote, found by scanning for the poison.
# Skipped (exit 77), saying why, where the shared models are absent.
#
#   launcher_report_test.sh MODEL PLANNER MODELS_DIR
set -euo pipefail
model=$1 planner=$2 models=$3
if [ ! -f "$models/$model.onnx" ]; then
  echo "SKIPPED: $model needs $models/$model.onnx, which is absent"; exit 77
fi
source "$(dirname "$0")/shrink_maps.sh"
shrink_map "$model"
python=$(command -v python3 || true)
[ -z "$python" ] && { echo "SKIPPED: python3 is needed to read the reports"; exit 77; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
searches="dp frontier"
project=$work/project
mkdir -p "$project"
echo 'cmake_minimum_required(VERSION 3.20)
project(launcher_report LANGUAGES CXX)' > "$project/CMakeLists.txt"
for s in $searches; do
  "$planner" plan "$models/$model.onnx" --shrink "$shrink" ${batch:+--batch "$batch"} --gpus 4 \
    --search "$s" --budget 0 --no-progress -o "$work/$s.json" > "$work/$s.plan.log" \
    || { cat "$work/$s.plan.log"; exit 1; }
  "$planner" compile "$work/$s.json" --model "$models/$model.onnx" -o "$work/$s" > /dev/null
  printf 'set(PLANNER_LAUNCHER_TARGET launcher_%s)\nadd_subdirectory(%s %s)\n' "$s" \
    "$work/$s/launcher" "$s" >> "$project/CMakeLists.txt"
done
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR=$work
cmake -S "$project" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
  > "$work/cmake.log" 2>&1 || { tail -30 "$work/cmake.log"; exit 1; }
cmake --build "$work/build" > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }

status=0
for s in $searches; do
  "$work/build/$s/launcher" --steps 3 --poison --report "$work/$s.report.json" > "$work/$s.run.log" \
    || { cat "$work/$s.run.log"; exit 1; }
  "$python" - "$work/$s/manifest.json" "$work/$s.report.json" "$model $s" <<'EOF' || status=1
import json, sys
manifest, report = (json.load(open(p)) for p in sys.argv[1:3])
label = sys.argv[3]
ok = True
for m, r in zip(manifest["ranks"], report["ranks"]):
    predicted = m["predicted"]["peak_memory_bytes"]
    peak = r["peak_memory_bytes"]
    # What the kernels wrote, found on the bytes (the poison's 0xFF left above it), against the
    # prediction: the arena (peak) is the planner's own layout read back, this is measured.
    touched = r["touched_bytes"]
    off = abs(peak - predicted) / max(predicted, 1)
    bad = []
    if off > 0.01: bad.append(f"peak {peak} vs predicted {predicted} ({off:.1%})")
    if touched < 0: bad.append("no touched_bytes (run with --poison)")
    elif abs(touched - predicted) > 0.01 * predicted + 256:
        bad.append(f"touched {touched} vs predicted {predicted} "
                   f"({(touched - predicted) / max(predicted, 1):+.1%})")
    if r["allocations_per_step"] != 0: bad.append(f"{r['allocations_per_step']} allocations/step")
    if r["host_syncs_per_step"] > 1: bad.append(f"{r['host_syncs_per_step']} host syncs/step")
    if r["host_fallback_kernels"] != 0: bad.append(f"{r['host_fallback_kernels']} host fallbacks")
    mem = m["memory"]
    frag = mem["arena_bytes"] / mem["live_peak_bytes"] - 1 if mem["live_peak_bytes"] else 0.0
    print(f"{label} rank {r['rank']}: peak {peak} B, touched {touched} B (predicted {predicted}, arena/live "
          f"+{frag:.1%}), {r['allocations_per_step']} allocations, "
          f"{r['host_syncs_per_step']} syncs, step {min(r['step_seconds']) * 1e3:.2f} ms"
          + ("" if not bad else "  FAIL: " + "; ".join(bad)))
    ok = ok and not bad
sys.exit(0 if ok else 1)
EOF
done
exit $status
