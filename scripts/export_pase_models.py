#!/usr/bin/python3
"""Exports PaSE's five benchmark workloads as graph-only ONNX files.

PaSE (Elango, "PaSE: Parallelization Strategies for Efficient DNN Training", IPDPS
2021; github.com/baidu-research/PaSE) plans AlexNet, ResNet-101, Inception-v3, a
two-layer LSTM language model (RNNLM) and a Transformer (NMT). The graphs below follow
its graph.py (the input graphs of its scheduler.py); the batch sizes are the paper's
(docs/PaSE_ipdps2021.pdf there: 128 for the CNNs, 64 for RNNLM and Transformer).

Each model is built with Debian's python3-torch (1.13) and python3-torchvision (no
weights downloaded) and exported in eval mode at opset 13 with static shapes; its large
initializers are references to an external-data file that is never written: the
planner reads shapes only.

Tracing at the paper's sizes would compute every activation (14 GB for RNNLM), so each
model is traced at small sizes (batch 2 and 3, sequence 5 and 7, RNNLM's vocabulary 11
and 13) and the numbers that depend on them are scaled up (see merge): the file is the
static export at the paper's sizes, byte for byte, in under 2 GB and 20 s a model.

usage: scripts/export_pase_models.py OUT_DIR [NAME ...]
"""
import copy
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import graph_only  # noqa: E402  (the shared helpers next to this script)

try:
    import numpy as np
    import onnx
    import torch
    import torchvision
    from onnx import numpy_helper
    from torch import nn
except ImportError as e:  # the caller turns this into a visible skip
    print(f"export_pase_models: {e}", file=sys.stderr)
    sys.exit(77)

CNN_BATCH = 128  # the paper, section IV (Experimental results)
SEQ_BATCH = 64
SEQ_LEN = 256
# The two values each size is traced at: never 1 (which code may special-case), and
# distinct, so every number that depends on a size differs between two traces.
TRACED = {"batch": (2, 3), "seq": (5, 7), "vocab": (11, 13)}


def pase_alexnet():
    """graph.py AlexNet(b): 227x227 input, five convolutions without padding on the
    first, three max pools, FC 9216-4096-4096-1024 (PaSE's last FC has 1024 units)."""
    def relu():
        return nn.ReLU(inplace=True)

    return nn.Sequential(
        nn.Conv2d(3, 96, 11, stride=4), relu(), nn.MaxPool2d(3, 2),
        nn.Conv2d(96, 256, 5, padding=2), relu(), nn.MaxPool2d(3, 2),
        nn.Conv2d(256, 384, 3, padding=1), relu(),
        nn.Conv2d(384, 384, 3, padding=1), relu(),
        nn.Conv2d(384, 256, 3, padding=1), relu(), nn.MaxPool2d(3, 2),
        nn.Flatten(),
        nn.Linear(256 * 6 * 6, 4096), relu(),
        nn.Linear(4096, 4096), relu(),
        nn.Linear(4096, 1024))


class RNNLM(nn.Module):
    """graph.py RNNLM(b): embedding (vocab 100000, 2048 units), two LSTM layers of
    2048 units, projection back to the vocabulary; sequences of 256 tokens."""

    def __init__(self, vocab=100000, units=2048, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, units)
        self.lstm = nn.LSTM(units, units, layers, batch_first=True)
        self.proj = nn.Linear(units, vocab)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.proj(out)


def sinusoid_table(length, width):
    pos = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    rate = torch.exp(torch.arange(0, width, 2, dtype=torch.float32) * (-math.log(10000.0) / width))
    table = torch.zeros(length, width)
    table[:, 0::2] = torch.sin(pos * rate)
    table[:, 1::2] = torch.cos(pos * rate)
    return table


class Transformer(nn.Module):
    """graph.py Transformer(b), the 'small' size: separate source and target
    embeddings (vocab 50000, width 512) plus a positional encoding, 6 encoder and 6
    decoder layers (8 heads of 64, feed-forward 2048, ReLU, add + LayerNorm after each
    sub-layer), and an output projection to the vocabulary without bias. As in PaSE,
    there is no attention mask and no final LayerNorm after either stack."""

    def __init__(self, vocab=50000, width=512, heads=8, ffn=2048, layers=6, seq=SEQ_LEN):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, width)
        self.tgt_embed = nn.Embedding(vocab, width)
        self.register_buffer("pos", sinusoid_table(seq, width).unsqueeze(0))
        enc = nn.TransformerEncoderLayer(width, heads, ffn, dropout=0.1, batch_first=True)
        dec = nn.TransformerDecoderLayer(width, heads, ffn, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(enc, layers, enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(dec, layers)
        self.proj = nn.Linear(width, vocab, bias=False)

    def forward(self, src, tgt):
        memory = self.encoder(self.src_embed(src) + self.pos)
        return self.proj(self.decoder(self.tgt_embed(tgt) + self.pos, memory))


def images(batch, side):
    return (torch.randn(batch, 3, side, side),), ["input"]


def tokens(batch, seq, names, vocab=1000):
    return tuple(torch.randint(0, vocab, (batch, seq)) for _ in names), list(names)


# name: (the model and its example inputs and their names at the sizes given, the
# paper's sizes). The sizes a model takes are traced small and scaled up (see merge).
MODELS = {
    "pase_alexnet": (lambda batch: (pase_alexnet(), images(batch, 227)),
                     {"batch": CNN_BATCH}),
    # graph.py ResNet101(b): torchvision's bottleneck layout [3, 4, 23, 3] on 227x227. The
    # paper evaluates the other four only; 128 is its CNN batch and scheduler.py's default.
    "pase_resnet101": (lambda batch: (torchvision.models.resnet101(weights=None),
                                      images(batch, 227)),
                       {"batch": CNN_BATCH}),
    # graph.py Inception3(b): torchvision's modules A-E, no auxiliary head, 299x299.
    "pase_inception_v3": (lambda batch: (torchvision.models.inception_v3(
        weights=None, aux_logits=False, init_weights=False), images(batch, 299)),
                          {"batch": CNN_BATCH}),
    # Its vocabulary is scaled too: at 100000 its embedding and projection take 1.6 GB,
    # and the tracer copies every weight.
    "pase_rnnlm": (lambda batch, seq, vocab: (RNNLM(vocab),
                                              tokens(batch, seq, ["input_ids"], vocab)),
                   {"batch": SEQ_BATCH, "seq": SEQ_LEN, "vocab": 100000}),
    "pase_transformer": (lambda batch, seq: (Transformer(seq=seq),
                                             tokens(batch, seq, ["src_ids", "tgt_ids"])),
                         {"batch": SEQ_BATCH, "seq": SEQ_LEN}),
}


def trace(name, sizes):
    """The static ONNX export of the model at the sizes given, without its weights
    (export_params=False): those stay graph inputs after the model's own."""
    torch.manual_seed(0)
    model, (args, input_names) = MODELS[name][0](**sizes)
    model.eval()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, name + ".onnx")
        # The Transformer is traced with grad: under no_grad its eval-mode layers take
        # PyTorch's fused fast path, which has no ONNX export.
        with torch.set_grad_enabled(name == "pase_transformer"):
            torch.onnx.export(model, args, path, input_names=input_names,
                              output_names=["logits"], opset_version=13,
                              training=torch.onnx.TrainingMode.EVAL, export_params=False)
        return onnx.load(path), len(input_names)


class Scaler:
    """Solves a number seen in each trace as c * x^i * y^j ... over the sizes x, y, ...
    (integers c and 0 <= i, j, ... <= 3) and gives it at the paper's sizes. The traces
    are: every size at its first TRACED value, then each size in turn at its second."""

    def __init__(self, name, real):
        self.name, self.real = name, real

    def __call__(self, values, where):
        values = [int(v) for v in values]
        v0 = values[0]
        if all(v == v0 for v in values):
            return v0
        scale, divisor = 1, 1
        for size, v1 in zip(self.real, values[1:]):
            x0, x1 = TRACED[size]
            # v1 / v0 == (x1 / x0)^p exactly
            p = next((p for p in range(4) if v1 * x0 ** p == v0 * x1 ** p), None)
            if p is None:
                break
            scale, divisor = scale * self.real[size] ** p, divisor * x0 ** p
        else:
            if v0 % divisor == 0:
                return v0 // divisor * scale
        sys.exit(f"export_pase_models: {self.name}: {where} is {values} in the traces at "
                 f"{traces_at(self.real)}: not c * a product of powers of those sizes")


def traces_at(real):
    """The sizes of each trace, as Scaler expects them."""
    base = {size: TRACED[size][0] for size in real}
    return [base] + [dict(base, **{size: TRACED[size][1]}) for size in real]


def scale_dims(scale, dims, where):
    """The dims of one tensor in every trace (TensorProto.dims or TensorShapeProto.dim)
    at the paper's sizes."""
    dims = [[getattr(d, "dim_value", d) for d in ds] for ds in dims]
    if len({len(ds) for ds in dims}) != 1:
        sys.exit(f"export_pase_models: {scale.name}: {where} changes rank with the sizes")
    return [scale(v, f"{where} dim {k}") for k, v in enumerate(zip(*dims))]


def scale_constant(scale, tensors, where):
    """A Constant's value (as in every trace) at the paper's sizes: its elements solved
    one by one where its shape stays, else one value filling the solved shape."""
    arrays = [numpy_helper.to_array(t) for t in tensors]
    out = copy.deepcopy(tensors[0])
    if all(a.shape == arrays[0].shape for a in arrays):
        if all(np.array_equal(a, arrays[0]) for a in arrays):
            return out
        if arrays[0].dtype.kind not in "iu":
            sys.exit(f"export_pase_models: {scale.name}: {where} has {arrays[0].dtype} "
                     "elements that change with the sizes")
        flat = [a.reshape(-1) for a in arrays]
        value = np.array([scale(v, f"{where} element {k}") for k, v in enumerate(zip(*flat))],
                         dtype=arrays[0].dtype).reshape(arrays[0].shape)
    else:
        fill = {x for a in arrays for x in np.unique(a).tolist()}
        if len(fill) != 1:
            sys.exit(f"export_pase_models: {scale.name}: {where} changes shape with the "
                     "sizes and is not filled with one value")
        dims = scale_dims(scale, [t.dims for t in tensors], where)
        value = np.full(dims, fill.pop(), dtype=arrays[0].dtype)
        del out.dims[:]
        out.dims.extend(dims)
    out.raw_data = value.tobytes()
    return out


def constants(proto):
    """(output name, value) of each Constant node."""
    return [(n.output[0], a.t) for n in proto.graph.node if n.op_type == "Constant"
            for a in n.attribute if a.name == "value"]


def skeleton(proto):
    """proto without the numbers that may change with the sizes: input and output dims
    (the weights' included), the contents of Constants."""
    proto = copy.deepcopy(proto)
    for value in list(proto.graph.input) + list(proto.graph.output):
        for d in value.type.tensor_type.shape.dim:
            d.ClearField("dim_value")
    for _, t in constants(proto):
        t.ClearField("dims")
        t.ClearField("raw_data")
    return proto.SerializeToString()


def merge(name, real):
    """The model's graph at the paper's sizes, from its graphs traced small, with its
    weights as initializers (without data). Tracing at the paper's sizes would compute
    every activation (14 GB for RNNLM, whose logits alone take 6.5 GB), so the model is
    traced with every size small, then with each size in turn at a second small value;
    the graphs must agree but in numbers, and each number that differs (a dim of an
    input, output or weight; an element of a Constant, such as a Reshape's target shape;
    the shape of a Constant filled with one value, such as the LSTM's zero state) is
    solved as c * batch^i * seq^j ... and written at the paper's sizes."""
    traces = [trace(name, sizes) for sizes in traces_at(real)]
    protos, own = [p for p, _ in traces], traces[0][1]
    if len({skeleton(p) for p in protos}) != 1:
        sys.exit(f"export_pase_models: {name}: the graphs traced at {traces_at(real)} "
                 "differ in more than their sizes")
    scale = Scaler(name, real)
    proto = copy.deepcopy(protos[0])
    graph = proto.graph
    for field in ("input", "output"):
        for k, value in enumerate(getattr(graph, field)):
            dims = scale_dims(scale, [getattr(p.graph, field)[k].type.tensor_type.shape.dim
                                      for p in protos], f"{field} {value.name}")
            for d, v in zip(value.type.tensor_type.shape.dim, dims):
                d.dim_value = v
    for (where, t), *ts in zip(*(constants(p) for p in [proto] + protos)):
        t.CopyFrom(scale_constant(scale, [t for _, t in ts], f"Constant {where}"))
    # The weights, graph inputs after the model's own, become initializers in that order
    # (export_params=True's order).
    weights = list(graph.input)[own:]
    del graph.input[own:]
    for value in weights:
        init = graph.initializer.add()
        init.name = value.name
        init.data_type = value.type.tensor_type.elem_type
        init.dims.extend(d.dim_value for d in value.type.tensor_type.shape.dim)
    graph.ClearField("value_info")
    # Nothing stale or inconsistent: strict shape inference (which follows the
    # Shape-Gather-Concat chains too) must agree with every size written.
    inferred = onnx.shape_inference.infer_shapes(proto, strict_mode=True, data_prop=True)
    for want, got in zip(graph.output, inferred.graph.output):
        if want.type != got.type:
            sys.exit(f"export_pase_models: {name}: output {want.name} is inferred as "
                     f"{got.type}, not {want.type}")
    return proto


def strip_weights(proto, data_file):
    """Points every initializer (all without data) at data_file, never written."""
    offset = 0
    for init in proto.graph.initializer:
        empty = onnx.helper.make_tensor("", init.data_type, [0], [])
        size = math.prod(init.dims) * numpy_helper.to_array(empty).itemsize
        if size < 64:  # an exporter keeps these inline, but there is no data here
            sys.exit(f"export_pase_models: initializer {init.name} has only {size} bytes")
        graph_only.point_to_external(onnx, init, data_file, offset, size)
        offset += size


def export(name, out_dir):
    proto = merge(name, MODELS[name][1])
    strip_weights(proto, name + ".onnx.data")
    graph_only.save(onnx, proto, os.path.join(out_dir, name + ".onnx"))


def main():
    return graph_only.main("export_pase_models", __doc__, MODELS, export, list(MODELS))


if __name__ == "__main__":
    sys.exit(main())
