# A single NVSwitch node: one level, every pair 450 GB/s.
$PLANNER topology show dgx-h100
