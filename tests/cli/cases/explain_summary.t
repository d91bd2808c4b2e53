# `planner explain` without --op: the costliest operator groups and their choices; a misspelt operator.
$PLANNER plan $EXAMPLES/transformer_block.onnxtxt --gpus 4 --no-progress -o $TMP/plan.json > /dev/null && $PLANNER explain $TMP/plan.json --model $EXAMPLES/transformer_block.onnxtxt --top 5; $PLANNER explain $TMP/plan.json --model $EXAMPLES/transformer_block.onnxtxt --op MatMull_0
