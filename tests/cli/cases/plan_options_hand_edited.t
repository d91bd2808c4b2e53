# A hand-edited plan's options are checked when compile, verify or explain read them back: the JSON type, the range, the plan's mode and GPU count; each error names the plan file and the JSON path, not a flag the user never gave.
$PLANNER generate gpt $TMP/tiny.onnx --layers 1 --hidden 32 --heads 2 --seq 8 --vocab 64 >/dev/null
$PLANNER plan $TMP/tiny.onnx --batch 16 --micro-batches 2 --gpus 16 --search data-parallel --replicas 1 --no-progress -o $TMP/p.json >/dev/null; echo "[exit $?]"
edit() { sed "s/$1/$2/" $TMP/p.json > $TMP/e.json; $PLANNER explain $TMP/e.json > /dev/null; echo "[exit $?]"; }
edit '"micro_batches": 2' '"micro_batches": 2.0'
edit '"micro_batches": 2' '"micro_batches": 3'
edit '"micro_batches": 2' '"micro_batches": 2, "pipeline_stages": 2.0'
edit '"micro_batches": 2' '"micro_batches": 2, "replicas": 3'
edit '"micro_batches": 2' '"micro_batches": 2, "replicas": 4, "pipeline_stages": 8'
edit '"micro_batches": 2' '"micro_batches": 2, "zero": 7'
edit '"micro_batches": 2' '"micro_batches": 2, "zero": 1'
edit '"micro_batches": 2' '"micro_batches": 2, "optimizer": "lamb"'
edit '"micro_batches": 2' '"micro_batches": 2, "dims": {"batch": -1}'
edit '"micro_batches": 2' '"micro_batches": 2, "batch": "16"'
edit '"micro_batches": 2' '"micro_batches": 18446744073709551615'
$PLANNER plan $TMP/tiny.onnx --batch 16 --mode infer --gpus 16 --search data-parallel --no-progress -o $TMP/i.json >/dev/null; echo "[exit $?]"
sed 's/"budget_s"/"micro_batches": 2, "budget_s"/' $TMP/i.json > $TMP/e.json; $PLANNER explain $TMP/e.json > /dev/null; echo "[exit $?]"
$PLANNER explain $TMP/p.json > /dev/null; echo "[exit $?]"
