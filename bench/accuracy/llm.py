#!/usr/bin/env python3
"""Holds the planner's predictions against published large-language-model training steps.

Reads the rows of ../shared/calibration/llm/measurements.json (each with its source), expresses
every row the planner can express exactly (the row's model shape, vocabulary as the framework
pads it, global batch, micro-batch size, tensor x pipeline x data degrees, recomputation,
precision and the GPUs and their network), plans it with that layout pinned, checks the layout
on the written plan file, and prints predicted against measured step time, the predicted peak
memory against the GPU's, the median and worst error, and the ratios between rows of one model
on one cluster. Rows it cannot express are listed with the reason.

usage: llm.py --planner build/planner [--calibration-dir ../shared/calibration/llm]
              [--only ID,ID] [--json] [--check] [--work DIR] [--framework NAME]

The planner writes its models, topologies and plans under --work (a fresh temporary folder by
default, removed at the end). Rows in HOLDOUT were never looked at while choosing the cost
model's parameters; the others were (fit). With --check it exits 1 unless the held targets hold
(see TARGETS); rows.json's convention of known misses is not used here: every miss is printed.
"""
import argparse
import json
import re
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROWS = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "calibration",
                                             "llm", "measurements.json"))
TARGETS = {"median": 0.10, "worst": 0.25, "ratio": 0.10, "memory": 0.15}

# Rows kept out of every choice of the cost model's parameters (the fit rows are the others).
HOLDOUT = {"DLPerf-Meg-DP16", "DLPerf-Meg-DP4TP2", "DLPerf-Meg-DP4TP8", "SC21-7.5B-TP4DP32",
           "SC21-145.6B-TP8PP8", "SeqSel-22B-TP8-seqsel"}

# Rows the model misses today, each held to at most its error now (no worse) until fixed, with
# the reason; a known miss back within the target fails --check too, so the list cannot
# outlive what it records. Keys: row id, or "median:fit" / "median:holdout".
NIC = ("unexplained: the tensor-parallel all-reduces over 16 and 32 GPUs cross each DGX-1's one "
       "100 Gb/s EDR NIC, priced as NCCL rings at its 12.5 GB/s line rate, and the measured steps "
       "are 1.5x and 1.8x the prediction; the data-parallel all-reduces of the TP 8 x DP rows "
       "cross the same NIC and are within 4%, so the NIC's rate alone is not the cause. Suspects: "
       "the algorithm NCCL 2.8 runs for activation-sized all-reduces across nodes, and the DGX-1's "
       "PCIe path to its one NIC (two switches and QPI away for six of the eight GPUs). Not "
       "fitted: an efficiency per link would be a constant per cluster")
RESERVED = ("the stated peak is torchtitan's max reserved memory (its memory monitor's "
            "max_reserved: what PyTorch's caching allocator holds, above what is allocated), the "
            "planner's the allocated peak of its step (with torch's fp32 loss, --loss). Between "
            "8 and 128 GPUs the stated peaks differ by 15.4 GiB, the predicted by 10.5 GiB, the "
            "sharded Adam state at 12 bytes per parameter; 16 bytes (with FSDP2's fp32 sharded "
            "gradients) would be 14.0. The torch.compile rows, whose allocator sees fewer and "
            "larger blocks, are within 14%. Not traced further: no allocator model is fitted")
EAGER = ("every torchtitan ratio divides by the eager 8-GPU row, predicted 9.5% fast (eager "
         "PyTorch's per-operator overheads beyond a kernel launch are not modelled; the compiled "
         "rows are within 1% at 8 GPUs)")
GATHER = (EAGER + "; and at 128 GPUs FSDP2 gathers its parameters in bf16 (param_dtype), or in "
          "FP8 with float8 all-gather, where the planner's ZeRO-3 gathers the f32 master copy: "
          "1.5x the bytes over the 400 Gb/s NICs, exposed once FP8 shortens the compute")
KNOWN_MISSES = {
    "DLPerf-Meg-TP16": (0.324, NIC),
    "DLPerf-Meg-TP32": (0.447, NIC),
    "memory:TT24-L31-8B-H100-8-FSDP": (0.198, RESERVED),
    "memory:TT24-L31-8B-H100-128-FSDP": (0.170, RESERVED),
    "memory:TT24-L31-8B-H100-8-FSDP8-CP1-32k": (0.224, RESERVED),
    "ratio:TT24-L31-8B-H100-8-FSDP-compile-fp8": (0.102, EAGER),
    "ratio:TT24-L31-8B-H100-8-FSDP8-CP1-32k": (0.111, EAGER),
    "ratio:TT24-L31-8B-H100-128-FSDP-compile-fp8": (0.191, GATHER),
}

# Assumptions where a source leaves a setting unstated (docs/cost-model.md says the same).
SC21_MICRO_BATCH = 1  # SC'21 Table 1 does not state it; section 5.4 sweeps 1 to 8 at TP 8


def padded_vocab(tp, multiple=128):
    """Megatron-LM pads GPT-2's 50,257 tokens to a multiple of 128 x TP."""
    m = multiple * tp
    return (50257 + m - 1) // m * m


def layout(row):
    """The planner's expression of a row: a dict, or a string saying why it cannot be."""
    p, h, s = row["parallelism"], row["hardware"], row["shape"]
    other = (p.get("other") or "")
    recompute = (p.get("activation_recompute") or "").lower()
    if row["step_time_s"] is None:
        return "no step time is derivable from the source"
    torchtitan = row["group"].startswith("torchtitan")
    if torchtitan:
        return torchtitan_layout(row, p["tp"], p["pp"], p["dp"], h["total_gpus"])
    if "selective" in recompute and "attention" not in recompute:
        return "selective recomputation of another kind than Megatron's or torchtitan's"
    sequence_parallel = "sequence parallel" in recompute or "sequence parallel" in other.lower()
    # "interleaved pipeline x3": Megatron-LM's interleaved 1F1B, 3 model chunks per stage.
    interleaved = re.search(r"interleaved pipeline x(\d+)", other.lower())
    virtual_stages = int(interleaved.group(1)) if interleaved else 1
    if "interleaved" in other.lower() and not interleaved:
        return "an interleaved pipeline whose model chunks per stage are not stated"
    if "Float8" in other or "FP8" in row["precision"]:
        return "FP8 matmuls are not expressible yet"
    if any(x.startswith("CP") for x in row["id"].split("-")) or "context" in other.lower():
        return "context parallelism is not expressible yet"
    tp, pp, dp = p["tp"], p["pp"], p["dp"]
    gpus = h["total_gpus"]
    if tp * pp * dp != gpus:
        return f"tp x pp x dp = {tp * pp * dp} is not the {gpus} GPUs"
    zero = p.get("zero_or_fsdp")
    if zero and pp > 1:
        return "ZeRO-3 with a pipeline is not expressible yet"
    if row["id"].startswith("SC21-1T"):
        return "3,072 GPUs with 64 stages: beyond this benchmark's time budget"
    if row["id"] == "SC21-175B-ZeRO3-1536":
        return ("planning 1,536 GPUs under ZeRO-3 needs more than the 24 GB of memory this "
                "machine has (killed at 24 GB): a finding, not a limit of the layout")
    mb = row["micro_batch_per_gpu"]
    mb = mb if isinstance(mb, int) else SC21_MICRO_BATCH
    local = row["global_batch"] // dp
    # Without a pipeline a step is one pass per replica unless the row accumulates gradients.
    accum = row.get("grad_accum") if isinstance(row.get("grad_accum"), int) else None
    if pp > 1:
        micro_batches = local // mb
    elif accum:
        micro_batches = accum
    else:
        micro_batches = 1
    vocab = padded_vocab(tp) if row["id"].startswith("DLPerf") else 51200
    return {"layers": s["layers"], "hidden": s["hidden"], "heads": s["heads"],
            "seq": s["seq_len"], "ffn": s.get("ffn") or 4 * s["hidden"], "vocab": vocab,
            "gpus": gpus, "nodes": h["nodes"], "gpu": h["gpu"], "tp": tp, "pp": pp, "dp": dp,
            "zero": 3 if zero else 0, "batch": row["global_batch"],
            "micro_batches": micro_batches,
            "recompute": "selective" if "selective" in recompute else "all" if recompute else "none",
            "sequence_parallel": sequence_parallel, "virtual_stages": virtual_stages}


# torchtitan's Llama 3.1 presets as `planner generate hf` names them (the shapes are checked
# against the row's in torchtitan_layout).
TORCHTITAN_PRESETS = {"Llama 3.1 8B": "llama3.1-8b", "Llama 3.1 70B": "llama3.1-70b",
                      "Llama 3.1 405B": "llama3.1-405b"}


def torchtitan_layout(row, tp, pp, dp, gpus):
    """torchtitan's step (FSDP2 over every GPU, bf16 parameters and fp32 gradient reduction, SDPA
    attention, op-level selective checkpointing; eager or torch.compile, bf16 or Float8 linears),
    or why it is not expressible."""
    p, h, s = row["parallelism"], row["hardware"], row["shape"]
    other = (p.get("other") or "").lower()
    if (p.get("cp") or 1) > 1:
        return "context parallelism is not expressible yet"
    if tp > 1 or pp > 1:
        # `--search megatron --tensor-parallel 8 --zero 3 --replicas 1` is FSDP over the data-
        # parallel ranks with TP inside the node, but planning 256 GPUs whole is killed at this
        # machine's 24 GB; --replicas shards state inside a replica only (docs/search.md).
        return ("FSDP2 with tensor or pipeline parallelism: state sharded across replicas is not "
                "built, and planned whole (--replicas 1) the 256-GPU 70B row is killed at this "
                "machine's 24 GB")
    if tp * pp * dp != gpus:
        return f"tp x pp x dp = {tp * pp * dp} is not the {gpus} GPUs"
    preset = TORCHTITAN_PRESETS.get(row["model"])
    if not preset:
        return f"{row['model']} has no preset"
    return {"preset": preset, "layers": s["layers"], "hidden": s["hidden"], "heads": s["heads"],
            "kv_heads": s["kv_heads"], "ffn": s["ffn"], "vocab": s["vocab"], "seq": s["seq_len"],
            "gpus": gpus, "nodes": h["nodes"], "gpu": "H100", "memory_gib": h["gpu_mem_gb"],
            "tp": tp, "pp": pp, "dp": dp, "zero": 3, "batch": row["global_batch"],
            "micro_batches": 1, "sequence_parallel": False,
            "recompute": "all" if (p.get("activation_recompute") or "").startswith("full")
                         else "ops",
            "attention": "fused",
            # torch.compile (Inductor's fusions), Float8 linears (torchao, dynamic scaling)
            "framework": "torch-compile" if "compile" in other else "torch",
            "precision": "fp8" if "float8" in other or "Float8" in row["precision"] else "bf16"}


def topology(planner, work, lay):
    """A topology file for the row's cluster, built from the planner's own presets."""
    if lay["gpu"] == "V100":
        base, name = "tensoropt-v100-2x8", f"dgx1-v100-16gb-{lay['nodes']}x8"
    elif lay["gpu"] == "H100":
        base, name = "h100-cluster-4x8", f"grand-teton-h100-96gb-{lay['nodes']}x8"
    else:
        base, name = "dgx-a100", f"selene-a100-80gb-{lay['nodes']}x8"
    path = os.path.join(work, name + ".json")
    if os.path.exists(path):
        return path
    j = json.loads(subprocess.run([planner, "topology", "show", base, "--format", "json"],
                                  capture_output=True, text=True, check=True).stdout)
    j["name"] = name
    j["nodes"][0]["count"] = lay["nodes"]
    if lay["gpu"] == "V100":
        j["description"] = (f"{lay['nodes']} DGX-1 (8 x V100 SXM2 16 GB, NVLink2 hybrid cube "
                            "mesh), one 100 Gb/s EDR NIC per node (DLPerf's cluster)")
    elif lay["gpu"] == "H100":
        # torchtitan's benchmark hosts: Grand Teton, 8 H100 SXM 96 GB (500 W) fully connected
        # by NVLink, 400 Gb/s RDMA per GPU. The 500 W clocks are not published: the SXM5 peak
        # stays, as torchtitan's own MFU figures assume.
        j["description"] = (f"{lay['nodes']} Grand Teton hosts: 8 x H100 SXM 96 GB on NVLink, "
                            "400 Gb/s RDMA per GPU (torchtitan's 2024-12 benchmark)")
        for t in j["device_types"].values():
            t["model"] = "NVIDIA H100 SXM 96GB (500 W)"
            t["memory_bytes"] = lay["memory_gib"] * 2**30
    else:
        # Selene: DGX A100 80 GB, eight 200 Gb/s HDR NICs per node (SC'21 section 5).
        j["description"] = (f"{lay['nodes']} DGX A100 80 GB, eight 200 Gb/s HDR InfiniBand "
                            "NICs per node (Selene, SC'21)")
        j["link_types"]["ib-hdr"] = {"bandwidth": 25e9, "latency": 1e-6}
        j["network"] = {"switches": ["ib"], "links": [{"from": "nic*", "to": "ib",
                                                       "type": "ib-hdr"}]}
    if lay["nodes"] == 1:
        j.pop("network", None)
        j["nodes"][0]["nics"] = []
        j["nodes"][0]["links"] = [l for l in j["nodes"][0]["links"]
                                  if "nic" not in str(l["from"]) + str(l["to"])]
    with open(path, "w") as f:
        json.dump(j, f, indent=1)
    return path


def model(planner, work, lay):
    if "preset" in lay:
        # torchtitan's loss: the logits widened to fp32, cross-entropy (--loss).
        path = os.path.join(work, f"{lay['preset']}-{lay['seq']}s-loss.onnx")
        if not os.path.exists(path):
            subprocess.run([planner, "generate", "hf", "--preset", lay["preset"], path,
                            "--seq", str(lay["seq"]), "--loss"],
                           capture_output=True, text=True, check=True)
        return path
    name = "gpt-{layers}l-{hidden}h-{heads}a-{seq}s-{vocab}v-{ffn}f.onnx".format(**lay)
    path = os.path.join(work, name)
    if not os.path.exists(path):
        subprocess.run([planner, "generate", "gpt", path, "--layers", str(lay["layers"]),
                        "--hidden", str(lay["hidden"]), "--heads", str(lay["heads"]),
                        "--seq", str(lay["seq"]), "--vocab", str(lay["vocab"]),
                        "--ffn", str(lay["ffn"]), "--dropout", "0.1"],
                       capture_output=True, text=True, check=True)
    return path


def plan_command(planner, work, row, lay, framework=None):
    out = os.path.join(work, row["id"] + ".plan.json")
    cmd = [planner, "plan", model(planner, work, lay), "--topology", topology(planner, work, lay),
           "--gpus", str(lay["gpus"]), "--batch", str(lay["batch"]),
           "--precision", lay.get("precision", "fp16"),
           "--optimizer", "adam", "--recompute", lay["recompute"], "--no-progress",
           "--format", "json", "-o", out, "--micro-batches", str(lay["micro_batches"])]
    if lay["zero"]:
        cmd += ["--search", "fsdp", "--zero", str(lay["zero"]), "--replicas", "1"]
    elif lay["tp"] == 1 and lay["pp"] == 1:
        cmd += ["--search", "data-parallel", "--replicas", "1"]
    else:
        # Megatron-LM's rank order: tensor-parallel ranks innermost, then data-parallel, the
        # pipeline outermost (a stage's tp x dp GPUs consecutive): one block of all the GPUs
        # where it is affordable to plan whole; on the SC'21 clusters, replicas of a tp x pp
        # block, whose data-parallel and pipeline links cross nodes just as Megatron's do
        # (Selene has a NIC per GPU).
        replicas = 1 if lay["pp"] > 1 and lay["gpus"] <= 64 else lay["dp"]
        cmd += ["--search", "megatron", "--replicas", str(replicas),
                "--tensor-parallel", str(lay["tp"])]
    if lay["pp"] > 1:
        cmd += ["--pipeline-stages", str(lay["pp"])]
    if lay.get("virtual_stages", 1) > 1:
        cmd += ["--virtual-stages", str(lay["virtual_stages"])]
    if lay["sequence_parallel"]:
        cmd += ["--sequence-parallel"]
    if lay.get("attention"):
        cmd += ["--attention", lay["attention"]]
    if lay.get("framework") or framework:
        cmd += ["--framework", lay.get("framework") or framework]
    return cmd, out


def measured_peak(row):
    """The row's stated peak memory in bytes (torchtitan's, in GiB), or None."""
    m = (row.get("measured") or {}).get("memory")
    if not m or m.get("unit", "").split()[0] != "GiB":
        return None
    return m["value"] * 2**30


def check_layout(plan_path, lay):
    """The plan file's tensor, pipeline and data degrees, against the row's."""
    plan = json.load(open(plan_path))
    opts = plan["search"]["options"]
    got_pp = int(opts.get("pipeline_stages", 1))
    got_dp = int(opts.get("replicas", 1)) * int(opts.get("nodes", 1))
    got_tp = int(opts.get("tensor_parallel", 1))
    if lay["tp"] == 1 and lay["pp"] == 1:
        got_dp, got_tp = plan["topology"]["num_devices"], 1
    want = (lay["tp"], lay["pp"], lay["dp"])
    got = (got_tp, got_pp, got_dp)
    if got != want:
        return f"the plan's tp, pp, dp are {got}, the row's {want}"
    if int(opts.get("virtual_stages", 1)) != lay.get("virtual_stages", 1):
        return f"the plan's virtual stages are {opts.get('virtual_stages', 1)}"
    if bool(opts.get("sequence_parallel", False)) != lay["sequence_parallel"]:
        return f"the plan's sequence parallelism is {opts.get('sequence_parallel', False)}"
    if opts.get("recompute", "none") != lay["recompute"]:
        return f"the plan's recomputation is {opts.get('recompute', 'none')}, the row's {lay['recompute']}"
    return None


def check_export(planner, plan_path, row, lay):
    """`planner export megatron` on the row's plan: the parallel arguments the row's source
    states must come back exactly (tensor, pipeline and its virtual stages, micro-batch and
    global batch, sequence parallelism, recomputation)."""
    run = subprocess.run([planner, "export", "megatron", plan_path], capture_output=True,
                         text=True)
    if run.returncode != 0:
        return "export megatron failed: " + (run.stderr.strip().splitlines() or ["?"])[-1]
    got = {}
    for line in run.stdout.splitlines():
        if line.startswith("--"):
            flag, _, value = line.partition(" ")
            got[flag] = value
    p = row["parallelism"]
    want = {"--tensor-model-parallel-size": str(p["tp"]),
            "--pipeline-model-parallel-size": str(p["pp"]),
            "--global-batch-size": str(row["global_batch"])}
    if isinstance(row.get("micro_batch_per_gpu"), int):
        want["--micro-batch-size"] = str(row["micro_batch_per_gpu"])
    if lay.get("virtual_stages", 1) > 1:
        want["--num-layers-per-virtual-pipeline-stage"] = str(
            row["shape"]["layers"] // (p["pp"] * lay["virtual_stages"]))
    if lay["sequence_parallel"]:
        want["--sequence-parallel"] = ""
    want["--recompute-granularity"] = {"all": "full", "selective": "selective"}.get(
        lay["recompute"])
    for flag, value in want.items():
        if got.get(flag) != value:
            return f"export megatron wrote {flag} {got.get(flag)}, the row's is {value}"
    dp = int(row["hardware"]["total_gpus"]) // (p["tp"] * p["pp"])
    if dp != p["dp"]:
        return f"export megatron's layout has {dp} data-parallel ranks, the row {p['dp']}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--planner", required=True)
    ap.add_argument("--rows", default=DEFAULT_ROWS)
    ap.add_argument("--only", help="comma-separated row ids")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--work", help="folder for models, topologies and plans (kept)")
    ap.add_argument("--framework", help="planner --framework for every row")
    args = ap.parse_args()
    if not os.path.exists(args.rows):
        print(f"SKIPPED: {args.rows} is not here", file=sys.stderr)
        return 77
    rows = json.load(open(args.rows))["rows"]
    if args.only:
        keep = set(args.only.split(","))
        rows = [r for r in rows if r["id"] in keep]
    work = args.work or tempfile.mkdtemp(prefix="planner-llm-")
    os.makedirs(work, exist_ok=True)
    results, skipped, failed = [], [], []
    try:
        for row in rows:
            lay = layout(row)
            if isinstance(lay, str):
                skipped.append((row["id"], lay))
                continue
            cmd, out = plan_command(args.planner, work, row, lay, args.framework)
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0:
                failed.append((row["id"], run.stderr.strip().splitlines()[-1:] or ["?"]))
                continue
            j = json.loads(run.stdout)
            bad = check_layout(out, lay)
            if not bad and "preset" not in lay:
                bad = check_export(args.planner, out, row, lay)
            if bad:
                failed.append((row["id"], [bad]))
                continue
            pred = j["predicted"]["step_time_s"]
            meas = row["step_time_s"]
            results.append({"id": row["id"], "use": "holdout" if row["id"] in HOLDOUT else "fit",
                            "model": row["model"], "gpu": lay["gpu"], "gpus": lay["gpus"],
                            "measured_s": meas,
                            "predicted_s": pred, "error": pred / meas - 1,
                            "peak_memory_bytes": j["predicted"]["peak_memory_bytes"],
                            "device_memory_bytes": row["hardware"]["gpu_mem_gb"] * 10**9,
                            "measured_peak_bytes": measured_peak(row),
                            "layout": f"tp{lay['tp']} pp{lay['pp']} dp{lay['dp']}"
                                      f" mb{lay['micro_batches']}"})
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    # Ratios between rows of one model on one kind of GPU: each row's step over the step of
    # the row with the fewest GPUs (DP8/DP1, TP8/DP8 ...): planners must rank layouts right.
    ratios = []
    by_model = {}
    for r in results:
        by_model.setdefault((r["model"], r["gpu"]), []).append(r)
    for rows_of in by_model.values():
        base = min(rows_of, key=lambda r: (r["gpus"], r["id"]))
        for r in rows_of:
            if r is base:
                continue
            meas = r["measured_s"] / base["measured_s"]
            pred = r["predicted_s"] / base["predicted_s"]
            ratios.append({"id": r["id"], "base": base["id"], "measured": meas,
                           "predicted": pred, "error": pred / meas - 1})
    summary = {}
    for use in ("fit", "holdout"):
        errs = [abs(r["error"]) for r in results if r["use"] == use]
        if errs:
            summary[use] = {"rows": len(errs), "median": statistics.median(errs),
                            "worst": max(errs),
                            "over_memory": [r["id"] for r in results if r["use"] == use and
                                            r["peak_memory_bytes"] > r["device_memory_bytes"]]}
    if args.json:
        print(json.dumps({"rows": results, "ratios": ratios, "not_expressible": skipped,
                          "failed": failed, "summary": summary}, indent=1))
    else:
        print(f"{'row':<28} {'use':<8} {'layout':<20} {'measured':>9} {'predicted':>9}"
              f" {'error':>7} {'peak GiB':>8} {'of GB':>5} {'measured peak':>13}")
        for r in results:
            peak = r["measured_peak_bytes"]
            stated = (f"{peak / 2**30:>6.1f} GiB {100 * (r['peak_memory_bytes'] / peak - 1):+5.0f}%"
                      if peak else "")
            print(f"{r['id']:<28} {r['use']:<8} {r['layout']:<20} {r['measured_s']:>8.3f}s"
                  f" {r['predicted_s']:>8.3f}s {100 * r['error']:>+6.1f}%"
                  f" {r['peak_memory_bytes'] / 2**30:>8.1f} {r['device_memory_bytes'] / 1e9:>5.0f}"
                  f" {stated:>13}")
        for rid, why in failed:
            print(f"{rid:<28} FAILED: {' '.join(why)}")
        print(f"\n{'ratio':<46} {'measured':>9} {'predicted':>9} {'error':>7}")
        for q in ratios:
            print(f"{q['id'] + ' / ' + q['base']:<46} {q['measured']:>9.3f} {q['predicted']:>9.3f}"
                  f" {100 * q['error']:>+6.1f}%")
        print()
        for use, s in summary.items():
            print(f"{use:<8} {s['rows']} rows: median |error| {100 * s['median']:.1f}%,"
                  f" worst {100 * s['worst']:.1f}%"
                  + (f"; over the GPU's memory: {', '.join(s['over_memory'])}"
                     if s["over_memory"] else ""))
        print(f"\nnot expressible ({len(skipped)} rows):")
        for rid, why in skipped:
            print(f"  {rid}: {why}")
    problems = check(results, ratios, summary) if args.check else []
    for p in problems:
        print(p)
    ok = not failed and not problems
    return 1 if args.check and not ok else 0


def check(results, ratios, summary):
    """What --check fails on: rows and medians over their targets or known misses, known misses
    back within the target, and rows over their GPU's memory (the configurations trained)."""
    out = []
    def held(key, value, target, what):
        miss = KNOWN_MISSES.get(key)
        if miss and value <= target:
            out.append(f"STALE KNOWN MISS: {what} is {100 * value:.1f}%, within the target"
                       f" {100 * target:.0f}%: remove {key!r} from KNOWN_MISSES")
        elif miss and value > miss[0]:
            out.append(f"WORSE: {what} is {100 * value:.1f}%, over its known miss"
                       f" {100 * miss[0]:.1f}% ({miss[1]})")
        elif miss:
            print(f"KNOWN MISS: {what} is {100 * value:.1f}% (target {100 * target:.0f}%, held to"
                  f" {100 * miss[0]:.1f}% until fixed): {miss[1]}")
        elif value > target:
            out.append(f"OUTSIDE: {what} is {100 * value:.1f}%, over the target {100 * target:.0f}%")
    for r in results:
        held(r["id"], abs(r["error"]), TARGETS["worst"], f"{r['id']}'s |error|")
        if r["measured_peak_bytes"]:
            err = abs(r["peak_memory_bytes"] / r["measured_peak_bytes"] - 1)
            held(f"memory:{r['id']}", err, TARGETS["memory"], f"{r['id']}'s peak memory error")
        if r["peak_memory_bytes"] > r["device_memory_bytes"]:
            out.append(f"OVER MEMORY: {r['id']} trained, and is predicted to need"
                       f" {r['peak_memory_bytes'] / 2**30:.1f} GiB")
    for q in ratios:
        held(f"ratio:{q['id']}", abs(q["error"]), TARGETS["ratio"],
             f"{q['id']} / {q['base']}'s ratio error")
    for use, s in summary.items():
        held(f"median:{use}", s["median"], TARGETS["median"], f"the {use} rows' median |error|")
    return out


if __name__ == "__main__":
    sys.exit(main())
