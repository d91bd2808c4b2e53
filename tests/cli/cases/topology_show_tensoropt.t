# TensorOpt's two DGX-1-like nodes: the levels recover nodes, NVLink quads and doubled links.
$PLANNER topology show tensoropt-v100-2x8
