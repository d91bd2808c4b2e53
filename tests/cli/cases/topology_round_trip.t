# What show --format json prints, check accepts back, unchanged.
$PLANNER topology show flexflow-k80-16x4 --format json > $TMP/k80.json &&
$PLANNER topology check $TMP/k80.json --format json > $TMP/again.json &&
cmp $TMP/k80.json $TMP/again.json && $PLANNER topology check $TMP/k80.json
