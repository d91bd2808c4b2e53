#!/usr/bin/env python3
"""Runs the ONNX project's node tests through the planner's cpu runtime.

Every test folder of Debian's libonnx-testdata (data/node/test_*: model.onnx and
test_data_set_0 with input_N.pb and output_N.pb) is verified with
`planner verify MODEL --mode infer --inputs test_data_set_0`: the unpartitioned step must
produce the expected outputs (ONNX's atol 1e-7, rtol 1e-3), and each partitioned step (every
--config, RANKS:SEARCH) what the unpartitioned one produced. A test whose model the planner
refuses (an operator, type or attribute outside its scope) is reported out of scope with the
planner's own one-line reason; the rest pass or fail.

usage: onnx_node_tests.py --planner build/planner [--data DIR] [--config 2:data-parallel ...]
                          [--filter SUBSTRING] [--every N] [--jobs N] [--json FILE] [--check]
With --check it exits 1 when a test in scope fails, 77 when the test data is absent.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

DATA = "/usr/share/libonnx-testdata/data/node"


def op_types(model):
    try:
        import onnx  # Debian's python3-onnx; only used to name the operator in reports
        m = onnx.load(model, load_external_data=False)
        return sorted({n.op_type for n in m.graph.node})
    except Exception:
        return []


# Tests whose expected outputs this runtime differs from on purpose, and why.
KNOWN = {
    "test_cast_FLOAT_to_BFLOAT16":
        "ONNX 1.12's expected values truncate f32 to bf16 (its cast.py keeps the high 16 bits); "
        "the runtime rounds to nearest even, as PyTorch and CUDA's __float2bfloat16 do",
    "test_castlike_FLOAT_to_BFLOAT16":
        "as test_cast_FLOAT_to_BFLOAT16",
    "test_castlike_FLOAT_to_BFLOAT16_expanded":
        "as test_cast_FLOAT_to_BFLOAT16",
}


def run_one(planner, test, configs, work):
    model = os.path.join(test, "model.onnx")
    data = os.path.join(test, "test_data_set_0")
    result = {"test": os.path.basename(test), "ops": op_types(model), "configs": {}}
    status = "pass"
    for cfg in configs:
        ranks, search = cfg.split(":")
        cmd = [planner, "verify", model, "--mode", "infer", "--inputs", data, "--gpus", ranks,
               "--search", search, "--steps", "1"]
        env = dict(os.environ, PLANNER_CACHE_DIR=work)
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        text = (out.stdout + out.stderr).strip()
        last = next((l for l in reversed(text.splitlines()) if l.startswith("error")), "")
        if out.returncode == 0:
            result["configs"][cfg] = "pass"
            continue
        if "differs from" in last:
            result["configs"][cfg] = "fail: " + last
            status = "fail"
        else:
            result["configs"][cfg] = "out of scope: " + last
            status = "scope" if status == "pass" else status
            break  # the model itself is refused: the other configs would say the same
    if status == "fail" and result["test"] in KNOWN:
        status = "known"
        result["why"] = KNOWN[result["test"]]
    result["status"] = status
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--planner", required=True)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--config", action="append",
                    help="RANKS:SEARCH to verify (default 2:data-parallel and 4:mcmc)")
    ap.add_argument("--filter", help="only tests whose name contains this")
    ap.add_argument("--every", type=int, default=1, help="only every N-th test (a sample)")
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2)))
    ap.add_argument("--json", help="write every test's result here")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if not os.path.isdir(args.data):
        print(f"SKIPPED: {args.data} is absent (Debian's libonnx-testdata; scripts/install-deps.sh)")
        return 77
    configs = args.config or ["2:data-parallel", "4:mcmc"]
    tests = sorted(os.path.join(args.data, t) for t in os.listdir(args.data)
                   if t.startswith("test_") and os.path.isfile(os.path.join(args.data, t, "model.onnx"))
                   and os.path.isdir(os.path.join(args.data, t, "test_data_set_0")))
    if args.filter:
        tests = [t for t in tests if args.filter in os.path.basename(t)]
    tests = tests[::args.every]
    with tempfile.TemporaryDirectory(prefix="planner-node-tests-") as work:
        # One runtime build shared by every verify (its cache), made by the first test alone.
        results = []
        if tests:
            results.append(run_one(args.planner, tests[0], configs, work))
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            results += list(pool.map(lambda t: run_one(args.planner, t, configs, work), tests[1:]))
    counts = {"pass": 0, "scope": 0, "fail": 0, "known": 0}
    for r in results:
        counts[r["status"]] += 1
        if r["status"] == "fail":
            bad = "; ".join(f"{c}: {v}" for c, v in r["configs"].items() if v != "pass")
            print(f"FAIL {r['test']} ({','.join(r['ops'])}): {bad}")
    for r in results:
        if r["status"] == "known":
            print(f"known difference {r['test']}: {r['why']}")
    reasons = {}
    for r in results:
        if r["status"] == "scope":
            why = next(v for v in r["configs"].values() if v.startswith("out of scope"))
            why = re.sub(r"^out of scope: error: [^:]*: ", "", why)
            reasons.setdefault(why[:160], []).append(r["test"])
    for why, names in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
        print(f"out of scope ({len(names)}): {why} [{', '.join(names[:4])}{', ...' if len(names) > 4 else ''}]")
    print(f"{len(results)} node tests ({', '.join(configs)}): {counts['pass']} pass, "
          f"{counts['fail']} fail, {counts['known']} known differences, {counts['scope']} out of scope")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if args.check and counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
