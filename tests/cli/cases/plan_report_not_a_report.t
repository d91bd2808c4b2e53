# `--report` into a folder holding other files: one line before searching, exit 1, the folder and the plan file untouched.
mkdir $TMP/mine && echo keep > $TMP/mine/notes.txt && $PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 4 --no-progress -o $TMP/plan.json --report $TMP/mine; s=$?; ls $TMP/mine; test -e $TMP/plan.json && echo "plan file written"; exit $s
