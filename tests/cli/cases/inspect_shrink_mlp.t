# --shrink: the example MLP with its batch 64 -> 4 and width 1024 -> 128 (the 10 classes stay).
$PLANNER inspect $EXAMPLES/mlp.onnxtxt --shrink 64=4 --shrink 1024=128
