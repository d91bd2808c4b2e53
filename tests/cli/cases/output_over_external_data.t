# An output is never one of the files that hold the model's external data (known only once the
# model is read): plan, simulate and frontier refuse to write over them, and the file is kept.
# The model is a hand-made protobuf: y = MatMul(x, W) with W (3x2 floats) stored in 'w.bin'.
. tests/cli/data/protobuf.sh
entry=$(lp 0x0a location; lp 0x12 w.bin)
init=$(printf '\x08\x03\x08\x02\x10\x01'; lp 0x42 W; lp 0x6a "$entry"; printf '\x70\x01')
node=$(lp 0x0a x; lp 0x0a W; lp 0x12 y; lp 0x22 MatMul)
graph=$(lp 0x0a "$node"; lp 0x12 g; lp 0x2a "$init"; lp 0x5a "$(vi x 4 3)"; lp 0x62 "$(vi y 4 2)")
{ printf '\x08\x08'; lp 0x42 $'\x10\x11'; lp 0x3a "$graph"; } > $TMP/model.onnx
head -c 24 /dev/zero > $TMP/w.bin
cd $TMP
$PLANNER plan model.onnx --gpus 2 -o w.bin; echo "exit $?"
$PLANNER simulate model.onnx --gpus 2 --trace ./w.bin; echo "exit $?"
$PLANNER frontier model.onnx --gpus 2 --csv w.bin > /dev/null; echo "exit $?"
cmp -s w.bin /dev/zero -n 24 && wc -c < w.bin
