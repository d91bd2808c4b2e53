# Heterogeneous clusters (issue 16): on one DGX H100 and one DGX A100, two pipeline stages are
# sized to their devices' speed (the H100 stage takes more of the model), the plan beats the
# same plan with the work cut into equal stages, and it verifies. (Large enough for its kernels
# to be bound by the devices, not by launching: at hidden 128 both stages launch-bound alike.)
$PLANNER generate gpt $TMP/g.onnx --layers 8 --hidden 256 --heads 4 --seq 64 --vocab 256 >/dev/null &&
$PLANNER plan $TMP/g.onnx --batch 32 --micro-batches 8 --topology $EXAMPLES/topologies/h100-a100-2x8.json --pipeline-stages 2 --search megatron --precision bf16 -o $TMP/p.json > $TMP/out.txt &&
grep -E '^(topology|pipeline) ' $TMP/out.txt &&
grep -o 'forward operator groups per stage: .*' $TMP/out.txt | awk -F': ' '{split($2, s, ", "); print (s[1] > s[2]) ? "the H100 stage holds more of the model" : "stages " $2}' &&
grep -o '([0-9.]*% faster)' $TMP/out.txt | tr -d '(%)' | awk '{print ($1 > 0) ? "beats equal stages" : "no faster than equal stages: " $1}' &&
$PLANNER verify $TMP/g.onnx --plan $TMP/p.json --topology $EXAMPLES/topologies/h100-a100-2x8.json | grep -v 'step:'
