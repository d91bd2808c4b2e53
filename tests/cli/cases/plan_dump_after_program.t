# --dump-after program: the compiled step of the plan, rank by rank (what compile writes as
# programs.txt), printed instead of writing the plan.
$PLANNER plan $EXAMPLES/mlp.onnxtxt --gpus 2 --search data-parallel --no-progress --dump-after program
