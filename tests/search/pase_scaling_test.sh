#!/usr/bin/env bash
# More GPUs are never predicted slower, on PaSE's benchmark workloads (Elango, IPDPS 2021):
# exports the model with scripts/export_pase_models.py into MODELS_DIR unless it is there
# already, then runs gpu_scaling_test.sh on it (8, 16, 32 and 64 GPUs, each search named).
#   pase_scaling_test.sh PLANNER EXPORTER MODELS_DIR MODEL SEARCH...
# Skips (77) where /usr/bin/python3 lacks torch, torchvision or onnx.
set -uo pipefail
planner=$1 exporter=$2 models=$3 m=$4
shift 4
py=/usr/bin/python3
if [ ! -f "$models/$m.onnx" ]; then
  [ -x "$py" ] || { echo "SKIPPED: $py is absent"; exit 77; }
  mkdir -p "$models" || exit 1
  log=$(mktemp); trap 'rm -f "$log"' EXIT
  # One export at a time (each traces small sizes and scales them up: under ~2 GB a model).
  lock=()
  command -v flock > /dev/null && lock=(flock "$models/.export.lock")
  start=$SECONDS
  "${lock[@]}" "$py" "$exporter" "$models" "$m" > "$log" 2>&1
  rc=$?
  if [ "$rc" = 77 ]; then
    echo "SKIPPED: $(grep -m1 '^export_pase_models:' "$log" || tail -1 "$log")"; exit 77
  elif [ "$rc" != 0 ] || [ ! -f "$models/$m.onnx" ]; then
    echo "$m: export failed ($rc): $(tail -1 "$log")"; exit 1
  fi
  echo "$m: exported in $((SECONDS - start)) s"
  rm -f "$log"; trap - EXIT
fi
exec bash "$(dirname "$0")/gpu_scaling_test.sh" "$planner" "$models" "$m" "$@"
