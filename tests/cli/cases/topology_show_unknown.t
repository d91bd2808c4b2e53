# A mistyped preset name gets a suggestion and the list.
$PLANNER topology show dgx-h10
