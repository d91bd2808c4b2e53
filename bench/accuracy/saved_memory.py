#!/usr/bin/python3
"""Holds the planner's peak memory of a training step against what PyTorch keeps.

For each model it builds the same module scripts/export_train_models.py exports (Debian's
python3-torch, on the CPU), runs one forward pass at the given batch and adds up the bytes of
every tensor autograd saves for the backward pass (torch.autograd.graph.saved_tensors_hooks,
each storage once, ReLUs in place as DeepLearningExamples runs them), plus the parameters and one
momentum buffer: what a PyTorch step of this model holds when its backward pass starts, with the
gradients freed between steps (zero_grad(set_to_none=True), PyTorch 2's default; the planner
counts a gradient from the backward operator that makes it to the update). It then prints the planner's predicted peak for the same step on one GPU (`planner
simulate --gpus 1 --optimizer momentum`) and the ratio of the two.

usage: saved_memory.py --planner build/planner --models DIR [--batch 8] [--check TOL]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

try:
    import torch
    import torchvision
    import export_train_models as models
except ImportError as e:  # the test turns this into a visible skip
    print(f"saved_memory: {e}", file=sys.stderr)
    sys.exit(77)

MODELS = {
    "resnet50_train": lambda: torchvision.models.resnet50(weights=None),
    "resnext101_32x4d_train": models.resnext101_32x4d,
    "se_resnext101_32x4d_train": models.se_resnext101_32x4d,
}


def pytorch_bytes(name, batch):
    torch.manual_seed(0)
    model = MODELS[name]()
    for m in model.modules():
        if isinstance(m, torch.nn.ReLU):
            m.inplace = True
    model.train()
    storages = {}

    def pack(t):
        s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()  # torch 1.13
        storages[s.data_ptr()] = s.nbytes() if hasattr(s, "nbytes") else s.size() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(torch.randn(batch, 3, 224, 224))
    params = {p.data_ptr(): p.numel() * p.element_size() for p in model.parameters()}
    saved = sum(v for k, v in storages.items() if k not in params)
    # the parameters and the momentum buffer
    return saved + 2 * sum(params.values())


def planner_bytes(planner, path, batch):
    out = subprocess.run([planner, "simulate", path, "--batch", str(batch), "--gpus", "1",
                          "--strategy", "data-parallel", "--optimizer", "momentum",
                          "--format", "json"], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    return json.loads(out.stdout)["peak_memory_bytes"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--planner", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--check", type=float, help="fail when a ratio is off 1 by more than this")
    args = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    print(f"{'model':28} {'batch':>5} {'pytorch GiB':>11} {'planner GiB':>11} {'ratio':>6}")
    worst = 0.0
    for name in MODELS:
        path = os.path.join(args.models, name + ".onnx")
        if not os.path.exists(path):
            raise FileNotFoundError(path)
        ref = pytorch_bytes(name, args.batch)
        got = planner_bytes(args.planner, path, args.batch)
        ratio = got / ref
        worst = max(worst, abs(ratio - 1))
        print(f"{name:28} {args.batch:5d} {ref / 2**30:11.3f} {got / 2**30:11.3f} {ratio:6.3f}")
    if args.check is not None and worst > args.check:
        print(f"a ratio is off 1 by {worst:.1%}, more than {args.check:.0%}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
