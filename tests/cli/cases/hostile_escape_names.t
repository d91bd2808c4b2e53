# Names from the model with terminal escape sequences are printed escaped (\x1b), in tables
# and in errors. The model is a hand-made protobuf: node 'ESC[31mevil' (Relu) in graph
# 'gESC]0;pwnedBEL', then the same with operator type 'BadESC[2J'.
. tests/cli/data/protobuf.sh
model() {
  local type ten vix viy node graph
  type=$(lp 0x0a "$(printf '\x08\x01'; lp 0x12 "$(lp 0x0a "$(printf '\x08\x02')")")")
  vix=$(lp 0x0a x; lp 0x12 "$type")
  viy=$(lp 0x0a y; lp 0x12 "$type")
  node=$(lp 0x0a x; lp 0x12 y; lp 0x1a $'\e[31mevil'; lp 0x22 "$1")
  graph=$(lp 0x0a "$node"; lp 0x12 $'g\e]0;pwned\a'; lp 0x5a "$vix"; lp 0x62 "$viy")
  printf '\x08\x08'; lp 0x42 $'\x10\x11'; lp 0x3a "$graph"
}
model Relu > $TMP/evil.onnx
$PLANNER inspect $TMP/evil.onnx --mode infer
$PLANNER inspect $TMP/evil.onnx --strategies
model $'Bad\e[2J' > $TMP/bad.onnx
$PLANNER inspect $TMP/bad.onnx
# Bytes that are not UTF-8 in a name: escaped in tables, replaced (U+FFFD) in JSON, never an
# internal error.
model Relu | sed 's/evil/bad\xff/' > $TMP/ff.onnx
$PLANNER inspect $TMP/ff.onnx --strategies
$PLANNER inspect $TMP/ff.onnx --strategies --format json
