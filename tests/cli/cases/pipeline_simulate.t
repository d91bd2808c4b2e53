# simulate runs a baseline inside pipeline stages. A GPT's LM head tied to its token embedding
# keeps its own copy of the table on the last stage (analysis/tied_copies.h), so even model
# parallelism inside the stages runs 1F1B. A plan 1F1B cannot order (a weight shared by layers on
# both stages, split differently there, so the last stage fetches it from the first in both
# parts of a pass) runs its micro-batches in GPipe order, says so (in its pipeline line too),
# and verifies.
$PLANNER generate gpt $TMP/tiny.onnx --layers 2 --hidden 64 --heads 4 --seq 16 --vocab 128 >/dev/null &&
$PLANNER simulate $TMP/tiny.onnx --batch 16 --micro-batches 4 --gpus 4 --pipeline-stages 2 | sed -n 3,5p &&
$PLANNER simulate $TMP/tiny.onnx --batch 16 --micro-batches 4 --gpus 4 --pipeline-stages 2 --strategy model-parallel | sed -n 4p &&
$PLANNER plan $TMP/tiny.onnx --batch 16 --micro-batches 4 --gpus 4 --pipeline-stages 2 --search model-parallel -o $TMP/g.json | grep -c 'GPipe' ;
$PLANNER verify $TMP/tiny.onnx --plan $TMP/g.json | grep -E '^ok' &&
$PLANNER plan tests/cli/data/models/tied_mlp.onnxtxt --batch 16 --micro-batches 4 --gpus 4 --pipeline-stages 2 --search model-parallel -o $TMP/p.json | grep -E 'GPipe|^pipeline' &&
$PLANNER verify tests/cli/data/models/tied_mlp.onnxtxt --plan $TMP/p.json | grep -v 'step:'
