# Where no step variant fits as given and no part of the step's shape is pinned, plan sizes it
# (cli/step_sizing.h): at each recomputation level the micro-batches whose memory floor (data
# parallelism with ZeRO-3) fits, and a pipelined shape, each planned; the fastest that fits is
# kept and the note lists every shape tried. A pinned shape is kept as given (the hint stays);
# with no shape whose floor fits, the error says the least memory the step needs. ZeRO-3 is
# among the variants --zero auto tries.
$PLANNER generate gpt $TMP/small.onnx --layers 4 --hidden 256 --heads 8 --seq 128 --vocab 1000 > /dev/null &&
$PLANNER plan $TMP/small.onnx --batch 64 --gpus 8 --optimizer adam --memory-limit 30MiB --no-progress -o $TMP/p.json | grep -E "^(pipeline|batch|step|peak|note: sized)"
$PLANNER explain $TMP/p.json | grep -E "^(pipeline|micro)" ; test -e $TMP/p.json && echo "plan written"
$PLANNER plan $TMP/small.onnx --batch 64 --gpus 8 --optimizer adam --memory-limit 30MiB --micro-batches 1 --no-progress -o $TMP/q.json; echo "exit $?"
$PLANNER plan $TMP/small.onnx --batch 64 --gpus 8 --optimizer adam --memory-limit 20MiB --no-progress -o $TMP/q.json; echo "exit $?"
test ! -e $TMP/q.json && echo "no second plan written"
$PLANNER plan $TMP/small.onnx --batch 64 --gpus 8 --optimizer adam --memory-limit 50MiB --no-progress -o $TMP/r.json | grep -E "^(batch|step|peak|note: (planned|sized))"
