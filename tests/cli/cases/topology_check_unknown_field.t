# A mistyped field name is an error, with a suggestion.
printf '%s\n' '{"name": "bad", "device_types": {"g": {"model": "G", "memory_bytes": 1000, "memory_bandwidth": 1e9, "peak_flops": {"f32": 1e12}}},
  "nodes": [{"gpus": {"type": "g", "count": 2}, "switches": ["sw"],
             "linkz": [{"from": "gpu*", "to": "sw", "bandwidth": 1e10, "latency": 1e-6}]}]}' > $TMP/bad.json
$PLANNER topology check $TMP/bad.json
