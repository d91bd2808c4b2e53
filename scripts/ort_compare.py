#!/usr/bin/env python3
"""Holds the planner's cpu runtime against onnxruntime on whole models.

For each MODEL the forward pass runs in onnxruntime (CPU build) on random inputs and weights,
and `planner verify MODEL --mode infer --weights --inputs DIR` then runs the same file, with
the same weights and inputs, unpartitioned (which must reproduce onnxruntime's outputs) and
partitioned (which must reproduce the unpartitioned run). The largest difference from
onnxruntime, relative to each output's largest magnitude, is printed per model.

A MODEL is either a file that holds its weights (scripts/export_corpus.py --weights), or
`FILE@SHRINK` for a graph-only file (../shared/models, the corpus's real widths): the script
then writes a copy whose every dimension OLD is NEW (SHRINK as planner's --shrink: OLD=NEW,...;
the integer constants that hold extents - Reshape's and Expand's shape, ConstantOfShape's input,
Split's sizes - mapped in value, other constants cut to their leading block, recurrent
hidden_size mapped) and whose float initializers hold random values. That copy is written by
this script, independently of the planner's own --shrink, and both programs read it.

Runs in the virtual environment of scripts/python_env.sh (onnxruntime, onnx, numpy).

With --reference the unpartitioned step is also held to the outputs of onnx.reference's
evaluator (the ONNX project's numpy implementation of the specifications), a second opinion
written by other people again.

usage: ort_compare.py --planner build/planner [--gpus 2] [--search dp] [--batch 2]
                      [--reference] [--work DIR] [--json FILE] [--check] MODEL[@SHRINK] ...
With --check it exits 1 when a model does not import, run or match; 77 when onnxruntime is
not importable.
"""
import argparse
import json
import os
import shutil
import re
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
except ImportError as e:
    print(f"SKIPPED: ort_compare: {e} (run it with scripts/python_env.sh's python)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_data import make_inputs, parse_map, read_dump, shrink_model  # noqa: E402


VERIFY_EXPECTED = re.compile(r"against .*: (\d+) outputs, largest error abs (\S+), rel (\S+);")
VERIFY_PARTITIONED = re.compile(r"^largest error: abs (\S+), rel (\S+);", re.M)


def compare(args, spec, index):
    path, _, shrink = spec.partition("@")
    name = os.path.splitext(os.path.basename(path))[0]
    work = os.path.join(args.work, f"{index:02d}_{name}")
    data = os.path.join(work, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    row = {"model": name, "source": spec}
    try:
        m = onnx.load(path, load_external_data=False)
        if shrink or any(t.data_location == onnx.TensorProto.EXTERNAL for t in m.graph.initializer):
            m = shrink_model(m, parse_map(shrink), args.seed)
        model = os.path.join(work, "model.onnx")
        onnx.save(m, model)
        inputs = make_inputs(m, args.batch, args.seed)
        session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        outputs = session.run(None, dict(inputs))
    except Exception as e:  # onnxruntime refuses the model: reported, not a crash
        row.update(status="ort-error", detail=str(e).splitlines()[0][:300])
        return row
    for i, (n, v) in enumerate(inputs):
        with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, n).SerializeToString())
    largest = 0.0
    for i, (o, v) in enumerate(zip(m.graph.output, outputs)):
        with open(os.path.join(data, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(v), o.name).SerializeToString())
        if np.issubdtype(np.asarray(v).dtype, np.floating) and np.asarray(v).size:
            largest = max(largest, float(np.nanmax(np.abs(v))))
    # Whole models accumulate rounding differently in each runtime (summation order, fused
    # kernels): absolute differences are held to 1e-4 of the outputs' largest magnitude.
    atol = max(1e-7, args.atol * largest)
    cmd = [args.planner, "verify", model, "--mode", "infer", "--weights", "--inputs", data,
           "--gpus", str(args.gpus), "--search", args.search, "--steps", "1",
           "--expected-atol", repr(atol), "--expected-rtol", repr(args.rtol),
           "--keep", os.path.join(work, "verify")]
    if any(d.HasField("dim_param") for vi in m.graph.input for d in vi.type.tensor_type.shape.dim):
        cmd += ["--batch", str(args.batch)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as e:
        row.update(status="fail", detail=f"{args.planner}: {e}")
        return row
    text = out.stdout + out.stderr
    row["outputs"] = len(outputs)
    e = VERIFY_EXPECTED.search(text)
    p = VERIFY_PARTITIONED.search(text)
    if e:
        row["ort_abs"], row["ort_rel"] = float(e.group(2)), float(e.group(3))
    if p:
        row["partitioned_rel"] = float(p.group(2))
    row["status"] = "pass" if out.returncode == 0 else "fail"
    if out.returncode != 0:
        errors = [l for l in text.splitlines() if l.startswith("error:")]
        row["detail"] = (errors[0] if errors else text.strip().splitlines()[-1])[:300]
    if args.reference:  # after verify's verdict, so a difference from it fails the model
        second_opinion(args, row, m, model, inputs, work, atol)
    if row["status"] == "pass" and not args.keep_all:
        shutil.rmtree(work, ignore_errors=True)
    return row


def second_opinion(args, row, m, model, inputs, work, atol):
    """onnx.reference's evaluator (the ONNX project's own numpy implementation of the operator
    specifications) on the same model and inputs; the unpartitioned step is held to its outputs
    too. Models it cannot run are reported, not failed."""
    data = os.path.join(work, "test_data_set_1")
    os.makedirs(data, exist_ok=True)
    for i, (n, v) in enumerate(inputs):
        with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, n).SerializeToString())
    # In a child process with a time limit: the evaluator is numpy written for clarity, and its
    # convolutions take minutes on the larger models.
    try:
        child = subprocess.run([sys.executable, os.path.abspath(__file__), "--evaluate-reference",
                                model, data], capture_output=True, text=True,
                               timeout=args.reference_timeout)
    except subprocess.TimeoutExpired:
        row["reference"] = f"not run: over {args.reference_timeout:g} s"
        return
    if child.returncode != 0:
        lines = (child.stderr or child.stdout).strip().splitlines()
        row["reference"] = f"not run: {(lines[-1] if lines else 'failed')[:120]}"
        return
    # The unpartitioned run of the first verify (its --keep folder) against these outputs, by
    # ONNX's rule (atol + rtol |expected|), without running the planner again.
    try:
        run = read_dump(os.path.join(work, "verify", "run0.dump"))
    except (OSError, ValueError) as e:
        row["reference"] = f"not compared: {e}"
        return
    worst, failed = 0.0, []
    for i, o in enumerate(m.graph.output):
        t = onnx.TensorProto()
        with open(os.path.join(data, f"output_{i}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        want = numpy_helper.to_array(t).astype(np.float64)
        got = run.get(o.name)
        if got is None:  # an output the importer folded to a constant: compared by verify
            continue
        got = got.astype(np.float64).reshape(want.shape)
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        diff = np.where(same, 0.0, np.abs(got - want))
        if np.any(diff > atol + args.rtol * np.abs(want)):
            failed.append(o.name)
        finite = want[np.isfinite(want)]
        scale = float(np.max(np.abs(finite))) if finite.size else 0.0
        worst = max(worst, float(np.max(diff)) / scale if scale > 0 and diff.size else 0.0)
    row["reference_rel"] = worst
    if failed:
        row["status"] = "fail"
        detail = f"against onnx.reference: {', '.join(failed)} outside the tolerance"
        row["detail"] = f"{row['detail']}; {detail}" if "detail" in row else detail


def evaluate_reference(model, data):
    """The child of second_opinion: onnx.reference's outputs for DATA/input_N.pb, written as
    DATA/output_N.pb."""
    from onnx.reference import ReferenceEvaluator
    m = onnx.load(model)
    feeds = {}
    for i, vi in enumerate(vi for vi in m.graph.input
                           if vi.name not in {t.name for t in m.graph.initializer}):
        t = onnx.TensorProto()
        with open(os.path.join(data, f"input_{i}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        feeds[vi.name] = numpy_helper.to_array(t)
    ref = ReferenceEvaluator(m).run(None, feeds)
    for i, (o, v) in enumerate(zip(m.graph.output, ref)):
        with open(os.path.join(data, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(v), o.name).SerializeToString())
    return 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--evaluate-reference":
        return evaluate_reference(sys.argv[2], sys.argv[3])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--planner", required=True)
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--search", default="dp")
    ap.add_argument("--batch", type=int, default=2, help="value of symbolic batch dimensions")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--atol", type=float, default=1e-4,
                    help="absolute tolerance, as a fraction of the outputs' largest magnitude")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--work", help="write the files here (default: a temporary folder); a "
                    "model's files are removed when it passes, unless --keep-all")
    ap.add_argument("--keep-all", action="store_true",
                    help="keep every model's files under --work (model, data, verify's folder)")
    ap.add_argument("--reference", action="store_true",
                    help="also hold the unpartitioned step to onnx.reference's evaluator")
    ap.add_argument("--reference-timeout", type=float, default=60,
                    help="seconds onnx.reference may take per model (default 60)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    tmp = None
    if not args.work:
        tmp = tempfile.TemporaryDirectory(prefix="ort_compare.")
        args.work = tmp.name
    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}; planner verify on "
          f"{args.gpus} ranks ({args.search})")
    print(f"{'model':<24} {'status':<9} {'outputs':>7} {'vs onnxruntime':>15} "
          f"{'partitioned':>12}" + (f" {'vs onnx.reference':>18}" if args.reference else ""))
    rows = []
    for i, spec in enumerate(args.models):
        row = compare(args, spec, i)
        rows.append(row)
        rel = f"{row['ort_rel']:.2e}" if "ort_rel" in row else "-"
        part = f"{row['partitioned_rel']:.2e}" if "partitioned_rel" in row else "-"
        ref = f"{row['reference_rel']:.2e}" if "reference_rel" in row else "-"
        print(f"{row['model']:<24} {row['status']:<9} {row.get('outputs', 0):>7} {rel:>15} "
              f"{part:>12}" + (f" {ref:>18}" if args.reference else ""), flush=True)
        if "reference" in row:
            print(f"    onnx.reference {row['reference']}", flush=True)
        if "detail" in row:
            print(f"    {row['detail']}", flush=True)
    if args.json:
        with open(args.json + ".part", "w") as f:
            json.dump(rows, f, indent=1)
        os.replace(args.json + ".part", args.json)
    failed = [r for r in rows if r["status"] != "pass"]
    print(f"{len(rows) - len(failed)} of {len(rows)} models match onnxruntime")
    if args.check and failed:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
