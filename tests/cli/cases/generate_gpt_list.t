# The GPT presets and their parameter counts (GPT-2 small: 124,439,808, as published).
$PLANNER generate gpt --list
