#!/usr/bin/env python3
"""Holds the planner's predictions against published measured training steps.

For every row of rows.json it runs `planner simulate` (data parallelism, the row's topology,
GPU count, per-GPU batch, precision and optimizer) on the training-mode export of the row's
model, and prints predicted against measured step time, the predicted peak memory against the
GPU's memory, each multi-GPU row's step over its 1-GPU row's (measured and predicted), and
the median and worst error for the rows used while choosing the cost model's parameters (fit)
and for those never looked at (holdout).

Rows marked "repeat" run a fit row's configuration again on another machine of the same kind
(ResNet-50 on the 32 GB DGX-1 is the 16 GB one's step): they measure run-to-run spread, are
reported on their own and count neither as fit nor as held out.

usage: accuracy.py --planner build/planner --models DIR [--rows rows.json] [--check] [--json]
With --check it exits 1 unless: median |error| <= 10%, worst <= 25%, and every N-GPU/1-GPU
ratio within 10% of the measured one (the targets), on fit and holdout rows alike. Where a
group misses a target today, rows.json's "known_misses" records it: {"use", "metric" (median,
worst or ratio), "at_most" (the value today), "why"}. Such a miss is printed with its reason
and holds the group to `at_most` instead (no worse than today); one that is back within the
target fails the check too, so the list never outlives what it records.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIMITS = {"median": 0.10, "worst": 0.25, "ratio": 0.10}


def simulate(planner, models, row, calibration=None):
    path = os.path.join(models, row["model"] + ".onnx")
    if not os.path.exists(path):
        raise FileNotFoundError(path)
    cmd = [planner, "simulate", path, "--batch", str(row["batch_per_gpu"] * row["gpus"]),
           "--topology", row["topology"], "--gpus", str(row["gpus"]),
           "--strategy", "data-parallel", "--precision", row["precision"],
           "--optimizer", row["optimizer"], "--format", "json"]
    if calibration:
        cmd += ["--calibration", calibration]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def device_memory(planner, topology):
    out = subprocess.run([planner, "topology", "show", topology, "--format", "json"],
                         capture_output=True, text=True, check=True)
    j = json.loads(out.stdout)
    return min(t["memory_bytes"] for t in j["device_types"].values())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--planner", required=True)
    ap.add_argument("--models", required=True, help="folder of the training-mode exports")
    ap.add_argument("--rows", default=os.path.join(HERE, "rows.json"))
    ap.add_argument("--check", action="store_true", help="exit 1 unless the limits hold")
    ap.add_argument("--limits", help="MEDIAN,WORST,RATIO fractions for --check (default 0.10,0.25,0.10)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--calibration", help="a calibration file for the kernel model (planner --calibration)")
    ap.add_argument("--gpus", type=int, help="only the rows on this many GPUs")
    args = ap.parse_args()
    if args.limits:
        LIMITS.update(zip(("median", "worst", "ratio"), (float(x) for x in args.limits.split(","))))
    rows = json.load(open(args.rows))["rows"]
    if args.gpus:
        rows = [r for r in rows if r["gpus"] == args.gpus]
    memory = {}
    results = []
    for row in rows:
        sim = simulate(args.planner, args.models, row, args.calibration)
        if row["topology"] not in memory:
            memory[row["topology"]] = device_memory(args.planner, row["topology"])
        pred = sim["step_time_s"]
        meas = row["measured_step_s"]
        results.append({"id": row["id"], "use": row["use"], "measured_s": meas,
                        "predicted_s": pred, "error": pred / meas - 1,
                        "peak_memory_bytes": sim["peak_memory_bytes"],
                        "device_memory_bytes": memory[row["topology"]],
                        "comm_bytes": sim["comm_bytes"], "row": row})
    by_key = {}
    for r in results:
        row = r["row"]
        key = (row["model"], row["topology"], row["precision"], row["batch_per_gpu"])
        by_key.setdefault(key, {})[row["gpus"]] = r
    ratios = []
    for key, runs in sorted(by_key.items()):
        if 1 not in runs:
            continue
        for g, r in sorted(runs.items()):
            if g == 1:
                continue
            meas = r["measured_s"] / runs[1]["measured_s"]
            pred = r["predicted_s"] / runs[1]["predicted_s"]
            ratios.append({"id": r["id"], "use": r["use"], "gpus": g, "measured": meas,
                           "predicted": pred, "error": pred / meas - 1})
    known = {(k["use"], k["metric"]): k for k in json.load(open(args.rows)).get("known_misses", [])}
    stale = []  # known misses that are back within the targets
    summary = {}
    ok = True
    for use in ("fit", "holdout", "repeat"):
        errs = [abs(r["error"]) for r in results if r["use"] == use]
        rerrs = [abs(r["error"]) for r in ratios if r["use"] == use]
        if not errs:
            continue
        s = {"rows": len(errs), "median": statistics.median(errs), "worst": max(errs),
             "worst_ratio": max(rerrs) if rerrs else 0.0, "known": []}
        s["ok"] = True
        for metric, key in (("median", "median"), ("worst", "worst"), ("ratio", "worst_ratio")):
            miss = known.get((use, metric))
            within = s[key] <= LIMITS[metric]
            if miss and within:
                stale.append(f"{use} {metric}")
                s["ok"] = False
            elif miss:
                s["known"].append((metric, miss))
                s["ok"] = s["ok"] and s[key] <= miss["at_most"]
            else:
                s["ok"] = s["ok"] and within
        over = [r["id"] for r in results
                if r["use"] == use and r["peak_memory_bytes"] > r["device_memory_bytes"]]
        s["over_memory"] = over
        s["ok"] = s["ok"] and not over
        ok = ok and s["ok"]
        summary[use] = s
    if args.json:
        for r in results:
            del r["row"]
        print(json.dumps({"rows": results, "ratios": ratios, "summary": summary}, indent=1))
    else:
        print(f"{'row':<30} {'use':<8} {'measured':>9} {'predicted':>9} {'error':>7}"
              f" {'peak GiB':>8} {'of GiB':>6}")
        for r in results:
            print(f"{r['id']:<30} {r['use']:<8} {r['measured_s']:>8.4f}s {r['predicted_s']:>8.4f}s"
                  f" {100 * r['error']:>+6.1f}% {r['peak_memory_bytes'] / 2**30:>8.1f}"
                  f" {r['device_memory_bytes'] / 2**30:>6.0f}")
        print()
        print(f"{'N-GPU / 1-GPU step':<30} {'use':<8} {'measured':>9} {'predicted':>9} {'error':>7}")
        for r in ratios:
            print(f"{r['id']:<30} {r['use']:<8} {r['measured']:>9.3f} {r['predicted']:>9.3f}"
                  f" {100 * r['error']:>+6.1f}%")
        print()
        for use, s in summary.items():
            print(f"{use:<8} {s['rows']} rows: median |error| {100 * s['median']:.1f}%,"
                  f" worst {100 * s['worst']:.1f}%, worst ratio error {100 * s['worst_ratio']:.1f}%"
                  f"{', over memory: ' + ', '.join(s['over_memory']) if s['over_memory'] else ''}"
                  f" -> {('within' if not s['known'] else 'within, but for its known misses,') if s['ok'] else 'OUTSIDE'} the targets"
                  f" (median {100 * LIMITS['median']:.0f}%, worst {100 * LIMITS['worst']:.0f}%,"
                  f" ratio {100 * LIMITS['ratio']:.0f}%)")
            for metric, miss in s["known"]:
                print(f"    KNOWN MISS of the {metric} target, held to at most "
                      f"{100 * miss['at_most']:.1f}% until fixed: {miss['why']}")
        for k in stale:
            print(f"STALE KNOWN MISS: {k} is back within its target; remove it from known_misses")
    ok = ok and not stale
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
