# The same in JSON: per strategy the split variable, output or reduction, and per input and
# worker the region as [lo, hi] per dimension (inclusive integers, since --sizes binds them all).
$PLANNER tdl show Conv1d --sizes B=8,CI=4,X=32,CO=16,DX=3 --format json
