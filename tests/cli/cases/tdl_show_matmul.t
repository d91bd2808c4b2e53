# MatMul's exactly three strategies (Tofu, section 4.2), regions symbolic: split m and n divide
# the output; split k is a reduction whose partial outputs are summed.
$PLANNER tdl show MatMul
