# A device type without its memory size.
printf '%s\n' '{"name": "bad",
  "device_types": {"g": {"model": "G", "memory_bandwidth": 1e9, "peak_flops": {"f32": 1e12}}},
  "nodes": [{"gpus": {"type": "g", "count": 1}}]}' > $TMP/bad.json
$PLANNER topology check $TMP/bad.json
