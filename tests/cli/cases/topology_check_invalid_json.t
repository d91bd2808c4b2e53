# Broken JSON: file, line and column.
printf '%s\n' '{' '  "name": "bad",' '  "nodes": [1, 2,]' '}' > $TMP/bad.json
$PLANNER topology check $TMP/bad.json
