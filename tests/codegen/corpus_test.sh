#!/usr/bin/env bash
# The model corpus (scripts/export_corpus.py: Llama, a mixture of experts, T5, ConvNeXt,
# MobileNetV3, Swin, a UNet and ViT, graph-only at their papers' widths, eval and training
# exports): every file imports, plans under dp, frontier and mcmc on 8 GPUs, and verifies
# shrunk (its corpus.json map) on 4 ranks. Prints one row per file and search: search seconds,
# the predicted step against data parallelism's. Skipped (77), saying why, where Debian's
# python3-torch cannot export the corpus.
#
#   corpus_test.sh PLANNER SOURCE_DIR WORK_DIR [NAME ...]
set -uo pipefail
planner=$1 src=$2 work=$3
shift 3
rm -rf "$work" && mkdir -p "$work/plans"
if ! /usr/bin/python3 "$src/scripts/export_corpus.py" "$work/corpus" "$@" > "$work/export.log" 2>&1; then
  echo "SKIPPED: scripts/export_corpus.py cannot export the corpus: $(tail -1 "$work/export.log")"
  exit 77
fi
mapfile -t rows < <(/usr/bin/python3 -c '
import json, sys
for r in json.load(open(sys.argv[1])):
    print(r["file"], r["mode"], r["batch"], r["shrink"])' "$work/corpus/corpus.json")
status=0
printf '%-24s %-6s %-9s %9s %12s %12s %7s\n' file mode search "search s" "step ms" "dp step ms" speedup
for row in "${rows[@]}"; do
  read -r file mode batch shrink <<< "$row"
  model="$work/corpus/$file"
  for search in dp frontier mcmc; do
    out="$work/plans/${file%.onnx}.$search"
    if ! "$planner" plan "$model" --gpus 8 --batch "$batch" --mode "$mode" --search "$search" \
         --max-proposals 500 --no-progress -o "$out.json" > "$out.log" 2>&1; then
      echo "FAIL: $file --search $search: $(grep -m1 error: "$out.log")"; status=1; continue
    fi
    # "search       dp, 566.69 ms" and "step time      66.45 ms       67.59 ms ..."
    awk -v f="$file" -v m="$mode" -v s="$search" '
      /^search/ { t = $(NF - 1); if ($NF == "ms") t /= 1000; else if ($NF == "us") t /= 1e6 }
      function ms(v, unit) { return unit == "s" ? v * 1000 : unit == "us" ? v / 1000 : v }
      /^step time/ { step = ms($3, $4); dp = ms($5, $6) }
      END { printf "%-24s %-6s %-9s %9.2f %12.2f %12.2f %6.2fx\n", f, m, s, t, step, dp, dp / step }
    ' "$out.log"
  done
  if ! "$planner" verify "$model" --shrink "$shrink" --batch 2 --gpus 4 --mode "$mode" \
       --search dp --steps 1 > "$work/plans/${file%.onnx}.verify.log" 2>&1; then
    echo "FAIL: $file: verify --shrink $shrink --batch 2 --gpus 4 --search dp:"
    tail -3 "$work/plans/${file%.onnx}.verify.log"
    status=1
  else
    echo "verified: $file ($(grep -m1 "^largest error" "$work/plans/${file%.onnx}.verify.log"))"
  fi
done
# Expert parallelism: with Adam's state the dp search splits the experts' FFN weights over the
# experts ([E, d, ffn], `e0`) and the compiled program dispatches tokens to them by all-to-all.
if [ -f "$work/corpus/moe_train.onnx" ]; then
  moe="$work/plans/moe_train.adam"
  if "$planner" plan "$work/corpus/moe_train.onnx" --gpus 8 --batch 128 --mode train \
       --optimizer adam --no-progress -o "$moe.json" > "$moe.log" 2>&1 &&
     "$planner" compile "$moe.json" --model "$work/corpus/moe_train.onnx" -o "$moe.out" \
       > "$moe.compile.log" 2>&1; then
    experts=$(/usr/bin/python3 -c '
import json, sys
ops = json.load(open(sys.argv[1]))["ops"]
print(sum(1 for o in ops if o["name"] in ("/moe/MatMul_1", "/moe/MatMul_2")
          and any(s["var"] == "e0" for s in o["splits"])))' "$moe.json")
    dispatch=$(grep -c "all_to_all .*/moe/MatMul_output_0" "$moe.out/programs.txt")
    echo "expert parallelism (moe_train, adam): $experts of 2 expert FFN matmuls split over" \
      "the experts; $dispatch all-to-all dispatches in the compiled program"
    if [ "$experts" != 2 ] || [ "$dispatch" = 0 ]; then
      echo "FAIL: moe_train with adam: expected the experts split and an all-to-all dispatch"
      status=1
    fi
  else
    echo "FAIL: moe_train with adam: $(grep -h -m1 error: "$moe.log" "$moe.compile.log")"
    status=1
  fi
fi
exit $status
