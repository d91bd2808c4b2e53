# An external-data file that is a FIFO inside the model's folder is refused at once (the
# import used to block forever opening it). The model is a hand-made protobuf: y = Reshape(x, s)
# with the shape vector s stored as external data in 'fifo.bin', which folding must read.
. tests/cli/data/protobuf.sh
entry=$(lp 0x0a location; lp 0x12 fifo.bin)
init=$(printf '\x08\x02\x10\x07'; lp 0x42 s; lp 0x6a "$entry"; printf '\x70\x01')
node=$(lp 0x0a x; lp 0x0a s; lp 0x12 y; lp 0x22 Reshape)
graph=$(lp 0x0a "$node"; lp 0x12 g; lp 0x2a "$init"; lp 0x5a "$(vi x 2 3)"; lp 0x62 "$(lp 0x0a y)")
{ printf '\x08\x08'; lp 0x42 $'\x10\x11'; lp 0x3a "$graph"; } > $TMP/model.onnx
mkfifo $TMP/fifo.bin
timeout 20 $PLANNER inspect $TMP/model.onnx
