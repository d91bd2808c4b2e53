# A zero bandwidth, located by its JSON path.
printf '%s\n' '{"name": "bad", "device_types": {"g": {"model": "G", "memory_bytes": 1000, "memory_bandwidth": 1e9, "peak_flops": {"f32": 1e12}}},
  "nodes": [{"gpus": {"type": "g", "count": 2}, "switches": ["sw"],
             "links": [{"from": "gpu*", "to": "sw", "bandwidth": 0, "latency": 1e-6}]}]}' > $TMP/bad.json
$PLANNER topology check $TMP/bad.json
