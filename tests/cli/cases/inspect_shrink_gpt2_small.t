# --shrink on the shared gpt2_small: batch 8 -> 2, sequence 256 -> 16, width 768 -> 96 (12 heads
# of 8), vocabulary 50257 -> 1000; the reshape constants (B*T, B*heads, head size) follow.
$PLANNER inspect $MODELS/gpt2_small.onnx --shrink 8=2,256=16,2048=32,768=96,2304=288,3072=384,96=24,64=8,50257=1000
