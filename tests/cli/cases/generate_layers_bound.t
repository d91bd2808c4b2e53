# --layers up to the documented maximum is refused at once when the model cannot be one ONNX file (under 2 GiB), never built in memory; a count that fits is written.
timeout 60 $PLANNER generate gpt $TMP/g.onnx --layers 16777216 --hidden 64 --heads 4 --seq 16 --vocab 128; echo "[exit $?]"
timeout 60 $PLANNER generate llama $TMP/l.onnx --layers 16777216 --hidden 64 --heads 4 --seq 16 --vocab 128; echo "[exit $?]"
timeout 60 $PLANNER generate gpt $TMP/g.onnx --layers 1000 --hidden 64 --heads 4 --seq 16 --vocab 128; echo "[exit $?]"
ls $TMP
