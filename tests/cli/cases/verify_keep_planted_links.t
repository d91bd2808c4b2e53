# A reused `verify --keep DIR` is emptied first: links planted in it (the dump, the launcher's CMakeLists.txt, a folder) are removed as links, and the files they point to are untouched.
mkdir $TMP/outside && echo precious > $TMP/outside/victim && mkdir $TMP/outside/folder && echo mine > $TMP/outside/folder/file
$PLANNER verify $EXAMPLES/mlp.onnxtxt --gpus 2 --steps 1 --keep $TMP/work > /dev/null; echo "[exit $?]"
ln -sf $TMP/outside/victim $TMP/work/run0.dump
ln -s $TMP/outside/victim $TMP/work/CMakeLists.txt
ln -s $TMP/outside/folder $TMP/work/build
$PLANNER verify $EXAMPLES/mlp.onnxtxt --gpus 2 --steps 1 --keep $TMP/work | tail -1; echo "[exit $?]"
cat $TMP/outside/victim; ls -A $TMP/outside/folder
test -L $TMP/work/run0.dump || echo "run0.dump is a file of this run"
test -L $TMP/work/build || echo "build is a folder of this run"
