#!/usr/bin/env python3
"""Holds every operator the planner differentiates against torch.autograd, on inputs that
include the edges of each rule.

One ONNX model holds every case side by side: case K applies its operator to float inputs
that are parameters (`K.in0`, ...; so their gradients are what the planner's SGD step moves
them by) and constants, and its float outputs leave the graph as `K.out0 = y + offset` (a
constant random offset, so that the loss 0.5 * mean(z^2) seeds a nonzero gradient where y is
0, at ReLU's kink, a clip bound or a masked softmax row). The planner runs one step of it
unpartitioned (`planner verify --gpus 1 --lr 2^20`, so the change of each parameter over -lr
is its gradient to float32's precision); torch runs the same graph through scripts/
torch_onnx.py with autograd, in float64 and float32, and every output and gradient is
compared (torch_train_compare.py's rule: within 1e-4 of the tensor's scale, or 10 times
torch's own float32 difference).

The edges: ReLU, LeakyRelu, Abs, Clip, HardSigmoid, Shrink and ThresholdedRelu at and beside
their kinks (exact zeros, exact bounds), max-pool windows and reductions with tied maxima,
softmax rows with masked (-inf) entries and a fully masked row, Gather and GatherElements
indices at both ends of their range and negative, TopK with ties, Pad and Slice at the edges,
broadcasting in every binary operator.

usage: grad_sweep.py --planner build/planner [--work DIR] [--only NAME,...] [--check]
Exit 77 without torch.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import types

try:
    import numpy as np
    import onnx
    import torch
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    print(f"SKIPPED: grad_sweep: {e} (Debian's python3-torch and python3-onnx)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_onnx  # noqa: E402
import torch_train_compare as ttc  # noqa: E402
from model_data import read_dump  # noqa: E402

RNG = np.random.default_rng(7)
F32 = np.float32


def P(values):
    """A trainable float input."""
    return ("p", np.asarray(values, F32))


def C(values):
    """A constant input (an ONNX Constant node)."""
    return ("c", np.asarray(values))


def u(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, size=shape).astype(F32)


def with_edges(*shape, edges=(0.0,), lo=-2.0, hi=2.0):
    """Uniform values with `edges` planted at the first positions (each twice)."""
    v = u(*shape, lo=lo, hi=hi).reshape(-1)
    for i, e in enumerate(list(edges) * 2):
        if i < v.size:
            v[(i * 7) % v.size] = e
    return v.reshape(shape)


class Case:
    def __init__(self, name, op, inputs, attrs=None, outputs=1, float_outputs=None):
        self.name, self.op, self.inputs = name, op, inputs
        self.attrs = attrs or {}
        self.outputs = outputs
        self.float_outputs = float_outputs if float_outputs is not None else list(range(outputs))


def unary_cases():
    cases = []
    kink = with_edges(4, 6, edges=(0.0, 1e-30, -1e-30))
    smooth = u(4, 6)
    pos = u(4, 6, lo=0.1, hi=3.0)
    unit = u(4, 6, lo=-0.9, hi=0.9)
    for op in ["Relu", "Abs"]:
        cases.append(Case(op, op, [P(kink)]))
    for op in ["Sigmoid", "Tanh", "Erf", "Exp", "Softsign", "Sin", "Cos", "Atan", "Sinh",
               "Cosh", "Asinh", "Neg", "Softplus", "Mish"]:
        cases.append(Case(op, op, [P(smooth)]))
    for op in ["Sqrt", "Log", "Reciprocal"]:
        cases.append(Case(op, op, [P(pos)]))
    for op in ["Asin", "Acos", "Atanh", "Tan"]:
        cases.append(Case(op, op, [P(unit)]))
    cases.append(Case("Acosh", "Acosh", [P(u(4, 6, lo=1.1, hi=3.0))]))
    cases.append(Case("LeakyRelu", "LeakyRelu", [P(kink)], {"alpha": 0.1}))
    cases.append(Case("Elu", "Elu", [P(kink)], {"alpha": 0.7}))
    cases.append(Case("Celu", "Celu", [P(kink)], {"alpha": 1.5}))
    cases.append(Case("Selu", "Selu", [P(smooth)]))
    cases.append(Case("HardSigmoid", "HardSigmoid",
                      [P(with_edges(4, 6, edges=(-2.5, 2.5, 0.0), lo=-4, hi=4))],
                      {"alpha": 0.2, "beta": 0.5}))
    cases.append(Case("HardSwish", "HardSwish", [P(u(4, 6, lo=-4, hi=4))]))
    cases.append(Case("ThresholdedRelu", "ThresholdedRelu",
                      [P(with_edges(4, 6, edges=(1.0,)))], {"alpha": 1.0}))
    cases.append(Case("Shrink", "Shrink", [P(with_edges(4, 6, edges=(0.5, -0.5)))],
                      {"lambd": 0.5, "bias": 0.2}))
    bounds = with_edges(4, 6, edges=(-0.5, 0.5, 0.0))
    cases.append(Case("Clip", "Clip", [P(bounds), C(np.float32(-0.5)), C(np.float32(0.5))]))
    cases.append(Case("Clip.min_only", "Clip", [P(bounds), C(np.float32(-0.5))]))
    cases.append(Case("Clip.max_only", "Clip", [P(bounds), None, C(np.float32(0.5))]))
    cases.append(Case("Pow.square", "Pow", [P(smooth), C(np.float32(2.0))]))
    cases.append(Case("Pow.cube", "Pow", [P(smooth), C(np.float32(3.0))]))
    cases.append(Case("Pow.root", "Pow", [P(pos), C(np.float32(0.5))]))
    return cases


def binary_cases():
    cases = []
    for op in ["Add", "Sub", "Mul", "Div"]:
        a = u(3, 4, 5)
        b = u(4, 1, lo=0.5, hi=2.0) if op == "Div" else u(4, 1)
        cases.append(Case(op, op, [P(a), P(b)]))
        cases.append(Case(op + ".row", op, [P(u(5)), P(u(3, 4, 5, lo=0.5, hi=2.0))]))
    cases.append(Case("Sum", "Sum", [P(u(3, 4)), P(u(4)), P(u(3, 1))]))
    cond = RNG.random((3, 4)) < 0.5
    cases.append(Case("Where", "Where", [C(cond), P(u(3, 4)), P(u(4))]))
    return cases


def reduce_cases():
    cases = []
    tied = u(3, 4, 5)
    tied[0, 1, :] = 1.5  # a row of ties for Max and Min
    tied[1, :, 2] = -1.5
    for op in ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"]:
        cases.append(Case(op, op, [P(tied), C(np.array([2], np.int64))], {"keepdims": 1}))
        cases.append(Case(op + ".axes01", op, [P(tied), C(np.array([0, 1], np.int64))],
                          {"keepdims": 0}))
    return cases


def shape_cases():
    x = u(2, 3, 4)
    return [
        Case("Transpose", "Transpose", [P(x)], {"perm": [2, 0, 1]}),
        Case("Reshape", "Reshape", [P(x), C(np.array([6, -1], np.int64))]),
        Case("Flatten", "Flatten", [P(x)], {"axis": 2}),
        Case("Squeeze", "Squeeze", [P(u(2, 1, 4)), C(np.array([1], np.int64))]),
        Case("Unsqueeze", "Unsqueeze", [P(x), C(np.array([0, 3], np.int64))]),
        Case("Expand", "Expand", [P(u(3, 1)), C(np.array([2, 3, 4], np.int64))]),
        Case("Tile", "Tile", [P(u(2, 3)), C(np.array([2, 2], np.int64))]),
        Case("Identity", "Identity", [P(x)]),
        Case("Concat", "Concat", [P(u(2, 3)), P(u(2, 1)), P(u(2, 2))], {"axis": 1}),
        Case("Split", "Split", [P(u(2, 6)), C(np.array([1, 2, 3], np.int64))], {"axis": 1},
             outputs=3),
        Case("Split.unused", "Split", [P(u(4, 3))], {"axis": 0, "num_outputs": 2}, outputs=2,
             float_outputs=[1]),
        Case("Slice", "Slice", [P(u(4, 6)), C(np.array([1, 0], np.int64)),
                                C(np.array([4, 6], np.int64)), C(np.array([0, 1], np.int64))]),
        Case("Slice.step", "Slice", [P(u(4, 7)), C(np.array([0, 6], np.int64)),
                                     C(np.array([4, -100], np.int64)),
                                     C(np.array([0, 1], np.int64)),
                                     C(np.array([2, -2], np.int64))]),
        Case("Slice.clamped", "Slice", [P(u(4, 6)), C(np.array([-100], np.int64)),
                                        C(np.array([100], np.int64)),
                                        C(np.array([1], np.int64))]),
        Case("Pad", "Pad", [P(u(2, 3, 4)), C(np.array([0, 1, 2, 0, 2, 1], np.int64)),
                            C(np.float32(0.5))]),
        Case("Pad.crop", "Pad", [P(u(2, 5)), C(np.array([0, -1, 0, 2], np.int64))]),
        Case("Cast", "Cast", [P(x)], {"to": TensorProto.FLOAT}),
    ]


def index_cases():
    table = u(6, 4)
    idx = np.array([[0, 5, 5], [-1, -6, 2]], np.int64)  # both ends, negative, repeated
    ge_idx = np.array([[0, 3, 3, 0], [2, 0, 1, 3], [3, 3, 0, 0]], np.int64)
    topk_x = u(3, 6)
    topk_x[0, 1] = topk_x[0, 4] = 2.5  # a tie among the largest
    return [
        Case("Gather", "Gather", [P(table), C(idx)], {"axis": 0}),
        Case("Gather.axis1", "Gather", [P(table), C(np.array([3, 0, -1], np.int64))],
             {"axis": 1}),
        Case("GatherElements", "GatherElements", [P(u(3, 4)), C(ge_idx[:, :4])], {"axis": 1}),
        Case("GatherElements.axis0", "GatherElements",
             [P(u(4, 3)), C(np.array([[0, 3, 3], [3, 0, 1]], np.int64))], {"axis": 0}),
        Case("TopK", "TopK", [P(topk_x), C(np.array([3], np.int64))], {"axis": 1}, outputs=2,
             float_outputs=[0]),
        Case("CumSum", "CumSum", [P(u(3, 5)), C(np.array(1, np.int64))]),
        Case("CumSum.reverse", "CumSum", [P(u(3, 5)), C(np.array(0, np.int64))],
             {"reverse": 1, "exclusive": 1}),
    ]


def nn_cases():
    x4 = u(2, 3, 6, 6)
    ties = np.zeros((1, 2, 4, 4), F32)
    ties[0, 0] = [[1, 1, 0, 2], [1, 1, 2, 2], [0, 0, -1, -1], [3, 0, -1, -1]]
    ties[0, 1] = u(4, 4)
    masked = u(3, 5)
    mask = np.zeros((3, 5), F32)
    mask[0, 3:] = -np.inf
    mask[2, 1:] = -np.inf  # one survivor: exactly 1, no gradient
    return [
        Case("MatMul", "MatMul", [P(u(3, 4)), P(u(4, 5))]),
        Case("MatMul.batched", "MatMul", [P(u(2, 3, 4)), P(u(2, 4, 5))]),
        Case("MatMul.broadcast", "MatMul", [P(u(2, 3, 4)), P(u(4, 5))]),
        Case("MatMul.rows4d", "MatMul", [P(u(2, 2, 3, 4)), P(u(4, 5))]),
        Case("Gemm", "Gemm", [P(u(3, 4)), P(u(5, 4)), P(u(5))], {"transB": 1}),
        Case("Gemm.transA", "Gemm", [P(u(4, 3)), P(u(4, 5)), P(u(3, 1))],
             {"transA": 1, "alpha": 0.5, "beta": 2.0}),
        Case("Conv", "Conv", [P(x4), P(u(4, 3, 3, 3)), P(u(4))], {"pads": [1, 1, 1, 1]}),
        Case("Conv.strided", "Conv", [P(x4), P(u(4, 3, 3, 2))],
             {"strides": [2, 2], "pads": [0, 1, 1, 0], "dilations": [1, 2]}),
        Case("Conv.grouped", "Conv", [P(u(2, 4, 5, 5)), P(u(6, 2, 3, 3)), P(u(6))],
             {"group": 2}),
        Case("Conv.depthwise", "Conv", [P(u(2, 3, 5, 5)), P(u(3, 1, 3, 3))],
             {"group": 3, "pads": [1, 1, 1, 1]}),
        Case("Conv1d", "Conv", [P(u(2, 3, 8)), P(u(4, 3, 3))], {"pads": [1, 1]}),
        Case("MaxPool.ties", "MaxPool", [P(ties)], {"kernel_shape": [2, 2],
                                                    "strides": [2, 2]}),
        Case("MaxPool.overlap", "MaxPool", [P(x4)],
             {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
        Case("AveragePool", "AveragePool", [P(x4)],
             {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
        Case("AveragePool.include_pad", "AveragePool", [P(x4)],
             {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1],
              "count_include_pad": 1}),
        Case("GlobalAveragePool", "GlobalAveragePool", [P(x4)]),
        Case("GlobalMaxPool", "GlobalMaxPool", [P(x4)]),
        Case("Softmax", "Softmax", [P(u(3, 5))], {"axis": -1}),
        Case("LogSoftmax", "LogSoftmax", [P(u(3, 5))], {"axis": 0}),
        Case("LayerNormalization", "LayerNormalization", [P(u(2, 3, 8)), P(u(8)), P(u(8))],
             {"axis": -1, "epsilon": 1e-5}),
        Case("LayerNormalization.axis1", "LayerNormalization",
             [P(u(2, 3, 4)), P(u(3, 4)), P(u(3, 4))], {"axis": 1}),
        Case("BatchNormalization", "BatchNormalization",
             [P(x4), P(u(3)), P(u(3)), P(u(3)), P(u(3, lo=0.5, hi=1.5))]),
        Case("BatchNormalization.train", "BatchNormalization",
             [P(x4), P(u(3)), P(u(3)), C(np.zeros(3, F32)), C(np.ones(3, F32))],
             {"training_mode": 1}, outputs=3, float_outputs=[0]),
        Case("InstanceNormalization", "InstanceNormalization", [P(x4), P(u(3)), P(u(3))]),
        Case("Dropout.train", "Dropout", [P(u(4, 8)), C(np.float32(0.25)), C(np.bool_(True))],
             outputs=1),
        Case("LSTM", "LSTM", [P(u(3, 2, 4)), P(u(1, 20, 4)), P(u(1, 20, 5)), P(u(1, 40)), None,
                              P(u(1, 2, 5)), P(u(1, 2, 5))], {"hidden_size": 5}, outputs=3),
        Case("LSTM.bidirectional", "LSTM", [P(u(3, 2, 4)), P(u(2, 12, 4)), P(u(2, 12, 3)),
                                            P(u(2, 24))],
             {"hidden_size": 3, "direction": "bidirectional"}, outputs=1),
        Case("GRU", "GRU", [P(u(3, 2, 4)), P(u(1, 15, 4)), P(u(1, 15, 5)), P(u(1, 30)), None,
                            P(u(1, 2, 5))], {"hidden_size": 5, "linear_before_reset": 1},
             outputs=2),
        Case("RNN", "RNN", [P(u(3, 2, 4)), P(u(1, 5, 4)), P(u(1, 5, 5)), P(u(1, 10))],
             {"hidden_size": 5}, outputs=2),
    ], masked, mask


def loss_cases():
    logits = u(4, 5)
    target = np.array([0, 4, 2, 4], np.int64)
    return [
        Case("NegativeLogLikelihoodLoss", "NegativeLogLikelihoodLoss", [P(logits), C(target)],
             {"reduction": "mean"}),
        Case("NegativeLogLikelihoodLoss.sum", "NegativeLogLikelihoodLoss",
             [P(u(4, 5)), C(target)], {"reduction": "sum"}),
        Case("NegativeLogLikelihoodLoss.ignore", "NegativeLogLikelihoodLoss",
             [P(u(4, 5)), C(np.array([0, 4, 1, 1], np.int64))],
             {"reduction": "mean", "ignore_index": 1}),
        Case("SoftmaxCrossEntropyLoss", "SoftmaxCrossEntropyLoss", [P(u(4, 5)), C(target)],
             {"reduction": "mean"}),
    ]


def all_cases():
    nn, masked, mask = nn_cases()
    cases = unary_cases() + binary_cases() + reduce_cases() + shape_cases() + index_cases() + \
        nn + loss_cases()
    # A masked softmax as attention writes it: scores plus a constant -inf mask.
    cases.append(("Softmax.masked", masked, mask))
    return cases


def build_model(cases):
    """The sweep model: every case side by side, at opset 18 (the newest the importer reads)."""
    nodes, inits, outputs = [], [], []
    counter = [0]

    def const(name, value):
        nodes.append(helper.make_node("Constant", [], [name],
                                      value=numpy_helper.from_array(np.asarray(value), name)))
        return name

    for case in cases:
        if isinstance(case, tuple):  # the masked softmax: Add(scores, mask) -> Softmax
            name, scores, mask = case
            inits.append(numpy_helper.from_array(scores, f"{name}.in0"))
            const(f"{name}.mask", mask)
            nodes.append(helper.make_node("Add", [f"{name}.in0", f"{name}.mask"],
                                          [f"{name}.masked"], name=f"{name}.add"))
            nodes.append(helper.make_node("Softmax", [f"{name}.masked"], [f"{name}.y0"],
                                          name=f"{name}.node", axis=-1))
            ys = [(f"{name}.y0", scores.shape)]
        else:
            name = case.name
            ins = []
            for i, spec in enumerate(case.inputs):
                if spec is None:
                    ins.append("")
                    continue
                kind, value = spec
                n = f"{name}.in{i}"
                if kind == "p":
                    inits.append(numpy_helper.from_array(value, n))
                else:
                    const(n, value)
                ins.append(n)
            outs = [f"{name}.y{j}" for j in range(case.outputs)]
            nodes.append(helper.make_node(case.op, ins, outs, name=f"{name}.node", **case.attrs))
            ys = [(outs[j], None) for j in case.float_outputs]
        for y, _ in ys:
            counter[0] += 1
            off = f"{y}.offset"
            # The offset's shape is unknown here; a scalar broadcasts, a per-element one would
            # need shape inference: a scalar from a fixed sequence keeps gradients nonzero.
            const(off, np.float32(0.25 + 0.5 * ((counter[0] * 0.618) % 1.0)))
            out = y.replace(".y", ".out")
            nodes.append(helper.make_node("Add", [y, off], [out], name=f"{out}.add"))
            outputs.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "grad_sweep", [], outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                             producer_name="grad_sweep")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--planner", required=True)
    ap.add_argument("--work")
    ap.add_argument("--only", help="comma-separated case names (prefixes)")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--timeout", type=float, default=900)
    args = ap.parse_args()
    cases = all_cases()
    if args.only:
        keep = args.only.split(",")
        cases = [c for c in cases if any((c[0] if isinstance(c, tuple) else c.name)
                                         .startswith(k) for k in keep)]
    tmp = None
    if not args.work:
        tmp = tempfile.TemporaryDirectory(prefix="grad_sweep.")
        args.work = tmp.name
    os.makedirs(os.path.join(args.work, "data"), exist_ok=True)
    m = build_model(cases)
    model = os.path.join(args.work, "model.onnx")
    onnx.save(m, model)
    opts = types.SimpleNamespace(optimizer="sgd", steps=1, lr=2.0 ** 20, recompute=None,
                                 batch=1, timeout=args.timeout, planner=args.planner,
                                 tolerance=1e-4, noise=10.0)
    try:
        dump = ttc.run_planner(opts, m, model, args.work)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"grad_sweep: planner: {e}")
        return 1
    trainable = ttc.trainable_of(dump, m)
    ref = ttc.torch_step(m, [], trainable, opts, torch.float64)
    t32 = ttc.torch_step(m, [], trainable, opts, torch.float32)
    groups = ttc.paired(dump, ref, t32, "sgd", 1, opts.lr)
    names = [c[0] if isinstance(c, tuple) else c.name for c in cases]
    failed = []
    print(f"torch {torch.__version__}: {len(names)} cases of {len({n.split('.')[0] for n in names})}"
          f" operators; largest difference from torch's float64 (torch float32 in brackets)")
    print(f"{'case':<34} {'status':<6} {'outputs':>19} {'gradients':>19}")
    for name in names:
        mine = {g: [it for it in items if it[0].rsplit(".", 1)[0] == name]
                for g, items in groups.items()}
        row = ttc.judge(opts, {"model": name}, {g: v for g, v in mine.items()
                                                if g in ("outputs", "gradients")})
        if not mine["gradients"]:
            row["status"] = "fail"
            row["detail"] = "no gradient reached the case's inputs"
        cells = [f"{ttc.fmt(row.get(g))} ({ttc.fmt(row.get(g + '_torch32'))})"
                 for g in ("outputs", "gradients")]
        print(f"{name:<34} {row['status']:<6} {cells[0]:>19} {cells[1]:>19}", flush=True)
        if row["status"] != "pass":
            failed.append(name)
            print(f"    {row.get('detail', '')}")
    print(f"{len(names) - len(failed)} of {len(names)} cases match torch.autograd")
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
