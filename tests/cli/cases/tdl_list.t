# Every operator the shipped library describes: op, domain, variants, where it is defined.
$PLANNER tdl list
