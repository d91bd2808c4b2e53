#!/usr/bin/env python3
"""Chooses the kernel model's parameters by coordinate descent on the fit rows of rows.json.

It minimises the sum of squared log errors of the predicted step times (holdout rows are never
read) and prints the calibration JSON it ends with; the defaults in analysis/cost_model.h are
set from it by hand (docs/cost-model.md records the run).

usage: fit.py --planner build/planner --models DIR [--gpus 1] [--rounds 2]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# (path in the calibration JSON, starting value: the defaults of analysis/cost_model.h)
PARAMS = [
    (("efficiency", "conv", "compute"), 0.62),
    (("efficiency", "conv", "tf32"), 0.165),
    (("efficiency", "conv", "half"), 0.60),
    (("efficiency", "matmul", "compute"), 0.90),
    (("efficiency", "matmul", "tf32"), 0.84),
    (("efficiency", "matmul", "half"), 0.69),
    (("efficiency", "elementwise", "memory"), 0.72),
    (("efficiency", "reduction", "memory"), 0.81),
    (("depth_half",), 27.0),
    (("launch_overhead",), 2.7e-6),
    (("speed_spread",), 0.2),
]
STEPS = [0.8, 0.9, 1.0, 1.1, 1.25]


def as_json(values):
    doc = {"schema": "planner-calibration/1"}
    for (path, _), v in zip(PARAMS, values):
        node = doc
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = v
    return doc


def loss(args, values, tmp):
    with open(tmp, "w") as f:
        json.dump(as_json(values), f)
    cmd = [sys.executable, os.path.join(HERE, "accuracy.py"), "--planner", args.planner,
           "--models", args.models, "--calibration", tmp, "--rows", args.fit_rows, "--json"]
    if args.gpus:
        cmd += ["--gpus", str(args.gpus)]
    out = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    return sum(math.log(1 + r["error"]) ** 2 for r in out["rows"] if r["use"] == "fit")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--planner", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--gpus", type=int)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    values = [v for _, v in PARAMS]
    tmp = tempfile.mktemp(suffix=".json")
    # Only the fit rows are ever simulated: the holdout rows stay unseen.
    rows = json.load(open(os.path.join(HERE, "rows.json")))
    rows["rows"] = [r for r in rows["rows"] if r["use"] == "fit"]
    args.fit_rows = tempfile.mktemp(suffix=".json")
    with open(args.fit_rows, "w") as f:
        json.dump(rows, f)
    best = loss(args, values, tmp)
    for _ in range(args.rounds):
        for i, ((path, _), _) in enumerate(zip(PARAMS, values)):
            start = values[i]
            for m in STEPS:
                cand = list(values)
                cand[i] = min(start * m, 0.9) if path[0] == "efficiency" else start * m
                val = loss(args, cand, tmp)
                if val < best - 1e-9:
                    best, values = val, cand
            print(f"{'.'.join(path)} = {values[i]:.4g}  loss {best:.4f}", file=sys.stderr)
    os.unlink(tmp)
    os.unlink(args.fit_rows)
    print(json.dumps(as_json(values), indent=1))


if __name__ == "__main__":
    sys.exit(main())
