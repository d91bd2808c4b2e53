# `-` is standard output only for `plan -o -`; elsewhere it is refused before any work, never a file named '-' (a model named '-' is not overwritten, two outputs never share it).
cd $TMP && cp $OLDPWD/$EXAMPLES/mlp.onnxtxt ./- && cp ./- mlp.onnxtxt
$PLANNER simulate mlp.onnxtxt --gpus 2 --trace -; echo "[exit $?]"
$PLANNER frontier mlp.onnxtxt --gpus 2 --no-progress --csv - --svg -; echo "[exit $?]"
$PLANNER plan mlp.onnxtxt --gpus 2 --no-progress -o plan.json --trace -; echo "[exit $?]"
$PLANNER generate gpt - --layers 1 --hidden 32 --heads 2 --seq 8 --vocab 64; echo "[exit $?]"
cmp ./- mlp.onnxtxt && echo "the model named '-' is unchanged"
$PLANNER plan mlp.onnxtxt --gpus 2 --no-progress --search data-parallel -o - | head -c 1; echo
$PLANNER simulate mlp.onnxtxt --gpus 2 --trace ./- > /dev/null; echo "[exit $?]"
ls -A
