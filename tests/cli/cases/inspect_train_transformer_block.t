# The training step of a transformer block: operator counts, groups and optimizer state.
$PLANNER inspect $EXAMPLES/transformer_block.onnxtxt --mode train --optimizer adam
