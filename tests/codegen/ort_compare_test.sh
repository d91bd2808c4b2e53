#!/usr/bin/env bash
# The planner's cpu runtime against onnxruntime (scripts/ort_compare.py) on whole models: the
# shrunk shared models (skipped one by one where ../shared/models lacks them), where Debian's
# python3-torch exports it the corpus's small models with weights (scripts/export_corpus.py
# --weights), and where transformers installs Hugging Face's architectures
# (scripts/export_hf_models.py; their training steps verified on 2 ranks too), and a small
# model of interpolated upsampling (scripts/export_interp_model.py; its training step too). Where
# onnx.reference's evaluator runs a model within 30 s, the unpartitioned step is held to it
# too. Skipped (77), saying why, where the virtual environment with onnxruntime cannot be made
# (scripts/python_env.sh).
#
#   ort_compare_test.sh PLANNER SOURCE_DIR MODELS_DIR VENV_DIR WORK_DIR
set -uo pipefail
planner=$1 src=$2 models=$3 venv=$4 work=$5
python=$("$src/scripts/python_env.sh" "$venv") || exit 77
source "$src/tests/codegen/shrink_maps.sh"
specs=()
for m in alexnet bert_base gpt2_small inception_v3 lstm_lm lstm_lm_unrolled mlp_8192x4 resnet50 vgg16; do
  if [ -f "$models/$m.onnx" ]; then
    shrink_map "$m"
    specs+=("$models/$m.onnx@$shrink")
  else
    echo "note: $models/$m.onnx is absent: not compared"
  fi
done
rm -rf "$work" && mkdir -p "$work/corpus"
hf_status=0  # parts that failed (below)
skipped=()   # parts whose exporter lacks a package (exit 77): the test reports SKIPPED
# An exporter's outcome: 0 exported; 77 a package is missing (a visible skip of that part);
# anything else fails the test (an export that breaks must not shrink what is compared).
exported() {  # NAME STATUS LOG
  if [ "$2" -eq 0 ]; then return 0; fi
  if [ "$2" -eq 77 ]; then
    echo "SKIPPED part: $1 ($(tail -1 "$3"))"; skipped+=("$1")
  else
    echo "FAIL: $1 export failed: $(tail -3 "$3")"; hf_status=1
  fi
  return 1
}
/usr/bin/python3 "$src/scripts/export_corpus.py" --weights "$work/corpus" > "$work/export.log" 2>&1
if exported "the corpus (scripts/export_corpus.py)" $? "$work/export.log"; then
  for f in "$work"/corpus/*_small.onnx; do specs+=("$f"); done
fi
# Interpolated upsampling (Resize in linear and cubic modes), exported as PyTorch writes it.
/usr/bin/python3 "$src/scripts/export_interp_model.py" "$work/interp_small.onnx" \
  > "$work/interp_export.log" 2>&1
if exported "the interpolation model (scripts/export_interp_model.py)" $? \
     "$work/interp_export.log"; then
  specs+=("$work/interp_small.onnx")
  # Its training step (ai.planner.ResizeGrad) on 2 ranks.
  if ! "$planner" verify "$work/interp_small.onnx" --gpus 2 --mode train --search dp --steps 1 \
       > "$work/interp_train.log" 2>&1; then
    echo "FAIL: interp_small training: $(tail -1 "$work/interp_train.log")"; hf_status=1
  fi
fi
# Hugging Face transformers' architectures, exported as users export them (weights inline).
"$python" "$src/scripts/export_hf_models.py" "$work/hf" > "$work/hf_export.log" 2>&1
if exported "Hugging Face's models (scripts/export_hf_models.py)" $? "$work/hf_export.log"; then
  for f in "$work"/hf/hf_*.onnx; do
    [ "$(basename "$f")" = hf_mixtral.onnx ] || specs+=("$f")
  done
  # Training steps of the same exports on 2 ranks.
  for m in llama gpt2 bert t5 vit convnext swin; do
    if ! "$planner" verify "$work/hf/hf_$m.onnx" --gpus 2 --mode train --search dp --steps 1 \
         > "$work/hf_$m.train.log" 2>&1; then
      echo "FAIL: hf_$m training: $(tail -1 "$work/hf_$m.train.log")"; hf_status=1
    fi
  done
  # Mixtral routes with NonZero (tokens per expert depend on the data): one line naming it.
  if "$planner" inspect "$work/hf/hf_mixtral.onnx" > "$work/hf_mixtral.log" 2>&1 ||
     ! grep -q "(NonZero): cannot infer a static shape" "$work/hf_mixtral.log"; then
    echo "FAIL: hf_mixtral: expected the one-line error naming its NonZero node:"
    cat "$work/hf_mixtral.log"; hf_status=1
  fi
fi
[ ${#specs[@]} -gt 0 ] || { echo "SKIPPED: no model to compare"; exit 77; }
"$python" "$src/scripts/ort_compare.py" --planner "$planner" --work "$work/runs" --reference --reference-timeout 30 \
  --json "$work/ort_compare.json" --check "${specs[@]}" || exit 1
[ $hf_status -eq 0 ] || exit $hf_status
if [ ${#skipped[@]} -gt 0 ]; then
  echo "SKIPPED: compared all but ${skipped[*]}, which could not be exported here"; exit 77
fi
