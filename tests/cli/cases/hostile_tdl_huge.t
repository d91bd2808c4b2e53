# A 50 MB one-line TDL file is refused at once, before tokenising (bounded time and memory).
head -c 52428800 /dev/zero | tr '\0' 'x' > $TMP/huge.tdl
$PLANNER tdl check $TMP/huge.tdl
$PLANNER inspect $EXAMPLES/mlp.onnxtxt --tdl $TMP/huge.tdl
