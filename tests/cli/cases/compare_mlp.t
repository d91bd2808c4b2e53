# Every search and baseline on the example MLP on 4 GPUs. mcmc stops at its proposal cap long
# before the budget, and --no-timings drops the search times, so the table is the same everywhere.
$PLANNER compare $EXAMPLES/mlp.onnxtxt --gpus 4 --max-proposals 200 --budget 60 --no-timings
