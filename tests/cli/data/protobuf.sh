# Shell helpers that write ONNX protobuf bytes by hand, for golden cases that need a model no
# exporter would write (sourced: `. tests/cli/data/protobuf.sh`; cases run from the source root).
#   lp FIELD BYTES       a length-delimited field: its tag byte, a one-byte length, the bytes
#   dims D...            TensorShapeProto dims (each a dim_value below 128)
#   vi NAME D...         a ValueInfoProto: NAME, float tensor of those dims
export LC_ALL=C
lp() { local s=$2; printf "\\x$(printf %02x $1)\\x$(printf %02x ${#s})%s" "$s"; }
dims() { local d out=; for d in "$@"; do out+=$(lp 0x0a "$(printf "\\x08\\x$(printf %02x $d)")"); done; printf '%s' "$out"; }
vi() { lp 0x0a "$1"; shift; lp 0x12 "$(lp 0x0a "$(printf '\x08\x01'; lp 0x12 "$(dims "$@")")")"; }
