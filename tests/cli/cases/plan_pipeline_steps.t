# A pipelined step variant that cannot fit is skipped on its memory floor (cli/step_sizing.h)
# or on a step of fewer passes, whose peak is a lower bound of the whole step's
# (cli/plan_model.h, peak_memory): the note says "at least".
$PLANNER generate gpt $TMP/small.onnx --layers 4 --hidden 256 --heads 8 --seq 128 --vocab 1000 > /dev/null &&
$PLANNER plan $TMP/small.onnx --batch 64 --gpus 8 --optimizer adam --pipeline-stages 2 --micro-batches 8 --memory-limit 30MiB --no-progress -o $TMP/p.json | grep -E "^(note: planned|peak)"
