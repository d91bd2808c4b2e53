# A symbolic link or a FIFO at an output path is refused, never followed or replaced; a symbolic link planted at the old fixed PATH.tmp is not followed.
cd $TMP && echo precious > victim.txt && ln -s victim.txt link.json && mkfifo fifo.json
$PLANNER plan $OLDPWD/$EXAMPLES/mlp.onnxtxt --gpus 4 --no-progress -o link.json; echo "[exit $?]"
$PLANNER simulate $OLDPWD/$EXAMPLES/mlp.onnxtxt --gpus 4 --trace fifo.json; echo "[exit $?]"
$PLANNER frontier $OLDPWD/$EXAMPLES/mlp.onnxtxt --gpus 4 --no-progress --svg link.json; echo "[exit $?]"
$PLANNER plan $OLDPWD/$EXAMPLES/mlp.onnxtxt --gpus 4 --no-progress --report link.json; echo "[exit $?]"
test -L link.json && test -p fifo.json && cat victim.txt
ln -s victim.txt trace.json.tmp && ln -s victim.txt plan.json.tmp && ln -s victim.txt frontier.csv.tmp
$PLANNER simulate $OLDPWD/$EXAMPLES/mlp.onnxtxt --gpus 4 --trace trace.json > /dev/null; echo "[exit $?]"
$PLANNER plan $OLDPWD/$EXAMPLES/mlp.onnxtxt --gpus 4 --no-progress -o plan.json --trace trace.json > /dev/null; echo "[exit $?]"
$PLANNER frontier $OLDPWD/$EXAMPLES/mlp.onnxtxt --gpus 4 --no-progress --csv frontier.csv > /dev/null; echo "[exit $?]"
cat victim.txt; ls -l trace.json.tmp plan.json.tmp frontier.csv.tmp | grep -c -- '-> victim.txt'
head -c 1 trace.json plan.json; echo; head -1 frontier.csv; ls -A
