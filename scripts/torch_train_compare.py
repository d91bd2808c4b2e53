#!/usr/bin/env python3
"""Holds the planner's training step against PyTorch's.

For each MODEL the same training step runs twice from the same weights and batch:
- in the planner's cpu runtime, unpartitioned (`planner verify MODEL --weights --inputs DIR
  --gpus 1 --mode train`; its reference run's dump holds every output and every updated
  parameter and optimizer state);
- in PyTorch: the ONNX graph as torch operations (scripts/torch_onnx.py), the planner's loss
  0.5 * mean(y^2) over each output, autograd's backward pass and torch.optim's update (SGD,
  SGD with momentum 0.9, Adam; learning rate 0.01 as the planner records it), in float32 and
  in float64.

Printed per case: the largest difference of the runtime from torch's float64 step, relative
to each tensor's largest magnitude, for the outputs, the gradients (with --optimizer sgd and
one step: the change of each parameter divided by -lr), the updated parameters and the
optimizer state; beside it torch's own float32 step's difference from float64. A case passes
when every difference is within --tolerance (default 1e-4 of the tensor's scale) or within
--noise times torch's own float32 difference, whichever is larger.

usage: torch_train_compare.py --planner build/planner [--optimizer sgd|momentum|adam]
          [--recompute all] [--steps N] [--batch B] [--check] [--json FILE] MODEL[@SHRINK] ...
MODEL is an .onnx or .onnxtxt file; @SHRINK maps widths (OLD=NEW,...) as ort_compare.py does.
Exit 77 where torch cannot be imported (the tests then skip).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    import torch
except ImportError as e:
    print(f"SKIPPED: torch_train_compare: {e} (Debian's python3-torch and python3-onnx)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_onnx  # noqa: E402
from model_data import (has_symbolic_dims, load_model, make_inputs, parse_map,  # noqa: E402
                        read_dump, shrink_model, write_inputs)

LR = 0.01  # the planner's learning rate (analysis::TrainingOptions)
MOMENTUM = 0.9  # ai.planner.Momentum's default
STATE_KEYS = {"momentum": {"velocity": "momentum_buffer"},
              "adam": {"m": "exp_avg", "v": "exp_avg_sq"}}


def prepare(args, spec, work):
    """Writes model.onnx (with weights) and data/input_N.pb; returns (model, inputs)."""
    path, _, shrink = spec.partition("@")
    m = shrink_model(load_model(path), parse_map(shrink), args.seed)
    if args.pin_relu:
        observe_relus(m)
    inputs = make_inputs(m, args.batch, args.seed)
    model = os.path.join(work, "model.onnx")
    onnx.save(m, model)
    write_inputs(inputs, os.path.join(work, "data"))
    return m, model, inputs


def observe_relus(m):
    """Makes every Relu's output a graph output, so the runtime's decisions can be imposed on
    torch's step (torch_onnx.run's relu_masks). The loss then covers them too, on both sides."""
    outputs = {o.name for o in m.graph.output}
    for node in m.graph.node:
        if node.op_type == "Relu" and node.output[0] not in outputs:
            m.graph.output.append(onnx.helper.make_tensor_value_info(
                node.output[0], onnx.TensorProto.FLOAT, None))
            outputs.add(node.output[0])


def relu_masks(m, dump):
    """The runtime's Relu decisions (output > 0) from its dump of the observed outputs."""
    return {n.output[0]: torch.from_numpy(dump[n.output[0]] > 0) for n in m.graph.node
            if n.op_type == "Relu" and n.output[0] in dump}


def run_planner(args, m, model, work, steps=None):
    steps = args.steps if steps is None else steps
    keep = os.path.join(work, f"verify{steps}")
    cmd = [args.planner, "verify", model, "--mode", "train", "--weights", "--inputs",
           os.path.join(work, "data"), "--gpus", "1", "--search", "data-parallel", "--steps",
           str(steps), "--optimizer", args.optimizer, "--keep", keep,
           "--lr", repr(getattr(args, "lr", LR))]
    if args.recompute:
        cmd += ["--recompute", args.recompute]
    if has_symbolic_dims(m):
        cmd += ["--batch", str(args.batch)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    if out.returncode != 0:
        lines = [l for l in (out.stdout + out.stderr).splitlines() if l.strip()]
        errors = [l for l in lines if l.startswith("error")]
        raise RuntimeError((errors or lines or ["planner verify failed"])[0][:400])
    dump = read_dump(os.path.join(keep, "run0.dump"))
    if not getattr(args, "keep_all", False):
        # Only the dump is read: the launcher built there is the model's size twice over.
        shutil.rmtree(keep, ignore_errors=True)
    return dump


def torch_step(m, inputs, trainable, args, dtype, masks=None, start=None):
    """The last of args.steps training steps in torch, from the initial weights (one step) or
    from `start`, the runtime's own dump after the steps before (each parameter's change and
    the optimizer state): each step is held against torch from where the runtime stood, so a
    difference is that step's, not one amplified over several. Returns (outputs, {param:
    change from the initial weights}, {param: gradient}, {param:state: value})."""
    graph = torch_onnx.Graph(m)
    values = {}
    for t in m.graph.initializer:
        values[t.name] = torch_onnx.tensor_of(t, dtype)
    lr = getattr(args, "lr", LR)
    params = {}
    for name in trainable:
        v = values[name].clone()
        if start is not None:
            v = v + torch.from_numpy(start[name + ":updated"].astype(np.float64)).to(dtype)
        params[name] = v.requires_grad_(True)
    feeds = {n: torch_onnx.tensor_of(onnx.numpy_helper.from_array(v, n), dtype)
             for n, v in inputs}
    plist = [params[n] for n in sorted(params)]
    if args.optimizer == "sgd":
        opt = torch.optim.SGD(plist, lr=lr)
    elif args.optimizer == "momentum":
        opt = torch.optim.SGD(plist, lr=lr, momentum=MOMENTUM)
    else:
        opt = torch.optim.Adam(plist, lr=lr)
    if start is not None:
        for name, p in params.items():
            state = {key: torch.from_numpy(start[f"{name}:{short}:updated"].astype(np.float64))
                     .to(dtype).clone() for short, key in STATE_KEYS.get(args.optimizer,
                                                                         {}).items()}
            if args.optimizer == "adam":
                state["step"] = torch.tensor(float(args.steps - 1))
            if state:
                opt.state[p] = state
    opt.zero_grad()
    env = torch_onnx.run(graph, {**values, **params, **feeds}, train=True, dtype=dtype,
                         relu_masks=masks)
    loss = torch_onnx.planner_loss([env[n] for n in graph.outputs])
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in params.items() if p.grad is not None}
    outputs = {n: env[n].detach().clone() for n in graph.outputs}
    opt.step()
    change = {n: (p.detach() - values[n]) for n, p in params.items()}
    state = {}
    for name, p in params.items():
        for short, key in STATE_KEYS.get(args.optimizer, {}).items():
            if key in opt.state[p]:
                state[f"{name}:{short}"] = opt.state[p][key].detach().clone()
    return outputs, change, grads, state


def scale_of(b):
    b = np.asarray(b, np.float64)
    finite = b[np.isfinite(b)]
    return float(np.max(np.abs(finite))) if finite.size else 0.0


def rel_diff(a, b, floor=0.0):
    """Largest |a - b| over the tensor's scale: its largest |b|, at least `floor`."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if a.shape != b.shape:
        return float("inf")
    if not a.size:
        return 0.0
    same = (a == b) | (np.isnan(a) & np.isnan(b))  # NaN matches NaN, an infinity itself
    if not np.all(same | (np.isfinite(a) & np.isfinite(b))):
        return float("inf")
    scale = max(scale_of(b), floor)
    d = float(np.max(np.where(same, 0.0, np.abs(a - b))))
    return d / scale if scale > 0 else d


def trainable_of(dump, m):
    """The parameters the planner updated (its dump holds NAME:updated for each)."""
    names = {t.name for t in m.graph.initializer}
    return sorted(n[:-len(":updated")] for n in dump
                  if n.endswith(":updated") and n[:-len(":updated")] in names)


def paired(dump, ref, t32, optimizer, steps, lr=LR):
    """The tensors both sides computed, by group: (name, runtime, torch float64, torch float32).
    Gradients are read off a single SGD step: the change of each parameter over -lr."""
    groups = {"outputs": [], "gradients": [], "updated": [], "state": []}
    for n in ref[0]:
        if n in dump and torch_onnx.is_float(ref[0][n]):
            groups["outputs"].append((n, dump[n], ref[0][n].numpy(), t32[0][n].numpy()))
    for n in ref[1]:
        groups["updated"].append((n, dump[n + ":updated"], ref[1][n].numpy(), t32[1][n].numpy()))
        if optimizer == "sgd" and steps == 1 and n in ref[2]:
            groups["gradients"].append((n, dump[n + ":updated"] / -lr, ref[2][n].numpy(),
                                        t32[2][n].numpy()))
    for n in ref[3]:
        if n + ":updated" in dump:
            groups["state"].append((n, dump[n + ":updated"], ref[3][n].numpy(),
                                    t32[3][n].numpy()))
    return groups


def group_floors(args, group, items):
    """The least scale each tensor is measured at. One backward pass computes every gradient
    with rounding relative to the whole gradient, so a gradient that vanishes mathematically
    (a key bias under softmax) holds rounding alone: gradients, updates and optimizer state are
    measured at no less than 1e-3 of the largest of their group (state: of its kind, m, v or
    velocity). An Adam update moves each element by up to about lr per step, whatever the
    gradient's size: its scale is at least lr times the steps."""
    if group == "outputs":
        return {n: 0.0 for n, *_ in items}
    kind = (lambda n: n.rsplit(":", 1)[-1]) if group == "state" else (lambda n: "")
    largest = {}
    for n, _, r, _ in items:
        largest[kind(n)] = max(largest.get(kind(n), 0.0), scale_of(r))
    floors = {n: 1e-3 * largest[kind(n)] for n, *_ in items}
    if group == "updated" and args.optimizer == "adam":
        lr = getattr(args, "lr", LR)
        floors = {n: max(f, lr * args.steps) for n, f in floors.items()}
    return floors


def adam_allowance(args, name, ref_state):
    """Per element, how far rounding may turn an Adam update: it divides the first moment by
    the root of the second, so where a moment lies within the tolerance of its scale of zero
    (a gradient that is mostly rounding) the update moves by up to its whole size, lr, and
    twice that where its sign flips (as codegen/verify.cpp allows between two runs)."""
    m = ref_state.get(name + ":m")
    v = ref_state.get(name + ":v")
    if args.optimizer != "adam" or m is None or v is None:
        return 0.0
    m, v = np.abs(m.numpy()), np.abs(v.numpy())
    dm = args.tolerance * scale_of(m)
    dv = args.tolerance * scale_of(v)
    turn = dm / np.maximum(m, 1e-300) + 0.5 * dv / np.maximum(v, 1e-300)
    return getattr(args, "lr", LR) * np.minimum(2.0, turn)


def judge(args, row, groups, ref_state=None):
    """Fills row's per-group differences and its status; a tensor passes within --tolerance of
    its scale or --noise times torch's own float32 difference from float64."""
    ok = True
    worst = ("", 0.0)
    for g, items in groups.items():
        floors = group_floors(args, g, items)
        row[g] = max((rel_diff(d, r, floors[n]) for n, d, r, _ in items), default=None)
        row[g + "_torch32"] = max((rel_diff(t, r, floors[n]) for n, _, r, t in items),
                                  default=None)
        for n, d, r, t in items:
            e = rel_diff(d, r, floors[n])
            allowed = max(args.tolerance, args.noise * rel_diff(t, r, floors[n]))
            if g == "updated" and ref_state:
                # Adam: per element, the allowance plus how far rounding turns the update.
                scale = max(scale_of(r), floors[n])
                extra = adam_allowance(args, n, ref_state)
                worst_ratio = float(np.max(np.abs(np.asarray(d, np.float64) - r) /
                                           (allowed * scale + extra))) if r.size else 0.0
                e, allowed = worst_ratio * allowed, allowed
            if not e <= allowed:
                ok = False
            if not e / allowed <= worst[1]:
                worst = (f"{g} '{n}': {e:.3g} (allowed {allowed:.3g})", e / allowed)
    row["tensors"] = sum(len(v) for v in groups.values())
    row["worst"] = worst[0]
    row["status"] = "pass" if ok else "fail"
    if not ok:
        row["detail"] = f"differs from torch: {worst[0]}"
    return row


def compare(args, spec, index):
    path = spec.partition("@")[0]
    name = os.path.splitext(os.path.basename(path))[0]
    work = os.path.join(args.work, f"{index:02d}_{name}_{args.optimizer}")
    os.makedirs(work, exist_ok=True)
    row = {"model": name, "source": spec, "optimizer": args.optimizer,
           "recompute": args.recompute or "none", "steps": args.steps, "precision": "fp32"}
    try:
        m, model, inputs = prepare(args, spec, work)
        dump = run_planner(args, m, model, work)
        before = run_planner(args, m, model, work, args.steps - 1) if args.steps > 1 else None
    except (RuntimeError, subprocess.TimeoutExpired, ValueError, OSError) as e:
        row.update(status="fail", detail=f"planner: {e}")
        return row
    trainable = trainable_of(dump, m)
    masks = relu_masks(m, dump) if args.pin_relu else None
    try:
        ref = torch_step(m, inputs, trainable, args, torch.float64, masks, before)
        t32 = torch_step(m, inputs, trainable, args, torch.float32, masks, before)
    except torch_onnx.Unsupported as e:
        row.update(status="unsupported", detail=f"torch: {e}")
        return row
    row = judge(args, row, paired(dump, ref, t32, args.optimizer, args.steps, args.lr), ref[3])
    if row["status"] == "pass" and not args.keep_all:
        shutil.rmtree(work, ignore_errors=True)
    return row


def fmt(v):
    return "-" if v is None else f"{v:.1e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--planner", required=True)
    ap.add_argument("--optimizer", default="sgd", choices=["sgd", "momentum", "adam"])
    ap.add_argument("--recompute", choices=["all"])
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--lr", type=float,
                    help="learning rate (default: 2^20 for one SGD step, whose change over -lr "
                    "is then the gradient to float32's precision; else the planner's 0.01)")
    ap.add_argument("--batch", type=int, default=2, help="value of symbolic batch dimensions")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tolerance", type=float, default=1e-4,
                    help="difference allowed, relative to each tensor's largest magnitude")
    ap.add_argument("--noise", type=float, default=10.0,
                    help="or this many times torch's own float32 difference from float64")
    ap.add_argument("--no-pin-relu", dest="pin_relu", action="store_false",
                    help="let torch decide its own Relu masks (by default the runtime's are "
                    "observed as extra outputs and imposed on torch's step)")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--work", help="write the files here (default: a temporary folder); a "
                    "case's files are removed when it passes, unless --keep-all")
    ap.add_argument("--keep-all", action="store_true",
                    help="keep every case's files under --work (model, inputs, verify's folders)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--check", action="store_true", help="exit 1 unless every case passes")
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    if args.lr is None:
        args.lr = 2.0 ** 20 if args.optimizer == "sgd" and args.steps == 1 else LR
    tmp = None
    if not args.work:
        tmp = tempfile.TemporaryDirectory(prefix="torch_compare.")
        args.work = tmp.name
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    print(f"torch {torch.__version__}; optimizer {args.optimizer}, recompute "
          f"{args.recompute or 'none'}, {args.steps} step(s), fp32; largest difference from "
          f"torch's float64 step (torch's own float32 in brackets)")
    print(f"{'model':<22} {'status':<7} {'outputs':>19} {'gradients':>19} {'updated':>19} "
          f"{'state':>19}")
    rows = []
    for i, spec in enumerate(args.models):
        row = compare(args, spec, i)
        rows.append(row)
        cells = [f"{fmt(row.get(g))} ({fmt(row.get(g + '_torch32'))})"
                 for g in ("outputs", "gradients", "updated", "state")]
        print(f"{row['model']:<22} {row['status']:<7} " + " ".join(f"{c:>19}" for c in cells),
              flush=True)
        if "detail" in row:
            print(f"    {row['detail']}", flush=True)
    if args.json:
        with open(args.json + ".part", "w") as f:
            json.dump(rows, f, indent=1)
        os.replace(args.json + ".part", args.json)
    failed = [r for r in rows if r["status"] != "pass"]
    print(f"{len(rows) - len(failed)} of {len(rows)} training steps match torch")
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
