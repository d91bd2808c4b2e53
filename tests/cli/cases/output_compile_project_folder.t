# `compile -o .`, `-o ..`, `-o MODEL` and `-o PLAN` (also through ./ and a hard link) from a project folder: refused with one line, exit 1, before any work; the model, the plan and the folders untouched.
mkdir -p $TMP/work/project/empty && cp $EXAMPLES/mlp.onnxtxt $TMP/work/project/ && cd $TMP/work/project
$PLANNER plan mlp.onnxtxt --gpus 2 --no-progress -o plan.json > /dev/null
sum() { md5sum mlp.onnxtxt plan.json | cut -c1-8; }
before=$(sum)
$PLANNER compile plan.json --model mlp.onnxtxt -o .; echo "[exit $?]"
$PLANNER compile plan.json --model mlp.onnxtxt -o ..; echo "[exit $?]"
$PLANNER compile plan.json --model mlp.onnxtxt -o mlp.onnxtxt; echo "[exit $?]"
$PLANNER compile plan.json --model mlp.onnxtxt -o ./plan.json; echo "[exit $?]"
ln mlp.onnxtxt hardlink.onnxtxt
$PLANNER compile plan.json --model hardlink.onnxtxt -o mlp.onnxtxt; echo "[exit $?]"
cd empty
$PLANNER compile ../plan.json --model ../mlp.onnxtxt -o .; echo "[exit $?]"
$PLANNER compile ../plan.json --model ../mlp.onnxtxt -o $TMP/work; echo "[exit $?]"
cd ..; ls -A . ..; test "$(sum)" = "$before" && echo "model and plan unchanged"
