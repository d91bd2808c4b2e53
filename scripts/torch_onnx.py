"""An ONNX graph run as PyTorch operations, so that autograd can differentiate it.

The outside reference for training steps (scripts/torch_train_compare.py): each ONNX operator is
mapped onto torch's own functions (torch.nn.functional, torch.matmul, ...), the loss and the
backward pass are autograd's, the update is torch.optim's. Nothing here comes from the planner:
the mapping follows the ONNX operator specifications (https://onnx.ai/onnx/operators/).

Two things are the planner's by definition and are reproduced from its documentation:
- training-mode Dropout keeps an element when a counter-based hash of (seed, index) is at least
  the ratio (docs/training.md); the seed is the FNV-1a hash of the node's name mixed with ONNX's
  `seed` attribute;
- the loss the planner trains every model output against: 0.5 * mean(y^2) (docs/training.md).

Runs under Debian's python3-torch (1.13) and python3-onnx (1.12).
"""
import math

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import helper, numpy_helper

MASK64 = (1 << 64) - 1


class Unsupported(Exception):
    pass


def attrs_of(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _s(v):
    return v.decode() if isinstance(v, bytes) else v


# ---- the planner's dropout draw (docs/training.md, "Dropout in training mode") ----

def dropout_seed(node_name, onnx_seed):
    h = 1469598103934665603
    for c in node_name.encode():
        h = ((h ^ c) * 1099511628211) & MASK64
    h ^= (onnx_seed * 0x9E3779B97F4A7C15) & MASK64
    return h >> 1


def dropout_keep(seed, shape, ratio):
    """The mask: element i (row-major index in the whole tensor) is kept when the top 24 bits of
    SplitMix64's finaliser of seed + golden * (i + 1), as a fraction, are at least `ratio`."""
    n = int(np.prod(shape)) if len(shape) else 1
    with np.errstate(over="ignore"):
        idx = np.arange(1, n + 1, dtype=np.uint64)
        z = np.uint64(seed) + np.uint64(0x9E3779B97F4A7C15) * idx
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    u = (z >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / 16777216.0)
    return torch.from_numpy((u >= np.float32(ratio)).reshape(shape))


# ---- helpers ----

TORCH_OF_ONNX = {
    onnx.TensorProto.FLOAT: torch.float32, onnx.TensorProto.DOUBLE: torch.float64,
    onnx.TensorProto.FLOAT16: torch.float16, onnx.TensorProto.BFLOAT16: torch.bfloat16,
    onnx.TensorProto.INT64: torch.int64, onnx.TensorProto.INT32: torch.int32,
    onnx.TensorProto.INT16: torch.int16, onnx.TensorProto.INT8: torch.int8,
    onnx.TensorProto.UINT8: torch.uint8, onnx.TensorProto.BOOL: torch.bool,
}


def ints(t):
    return [int(v) for v in t.reshape(-1).tolist()]


def is_float(t):
    return torch.is_tensor(t) and t.is_floating_point()


def norm_axis(a, rank):
    return a + rank if a < 0 else a


def conv_padding(x, a, kernel, dims, pad_value=0.0):
    """Applies ONNX's pads / auto_pad explicitly (torch pads symmetrically only)."""
    spatial = list(x.shape[2:])
    strides = a.get("strides", [1] * dims)
    dil = a.get("dilations", [1] * dims)
    auto = _s(a.get("auto_pad", "NOTSET"))
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads_b, pads_e = [], []
        for i in range(dims):
            out = -(-spatial[i] // strides[i])
            total = max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - spatial[i])
            small, big = total // 2, total - total // 2
            pads_b.append(big if auto == "SAME_LOWER" else small)
            pads_e.append(small if auto == "SAME_LOWER" else big)
    elif auto == "VALID":
        pads_b, pads_e = [0] * dims, [0] * dims
    else:
        p = a.get("pads", [0] * (2 * dims))
        pads_b, pads_e = p[:dims], p[dims:]
    if any(pads_b) or any(pads_e):
        flat = []
        for i in reversed(range(dims)):
            flat += [pads_b[i], pads_e[i]]
        x = F.pad(x, flat, value=pad_value)
    return x, pads_b, pads_e


# ---- the interpreter ----

class Graph:
    """A loaded ONNX model: its nodes, initializers and inputs and outputs."""

    def __init__(self, model):
        self.model = model
        self.graph = model.graph
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                          13)
        self.initializers = {t.name: t for t in self.graph.initializer}
        self.inputs = [vi for vi in self.graph.input if vi.name not in self.initializers]
        self.outputs = [vi.name for vi in self.graph.output]


def run(graph, values, train=True, dtype=torch.float32, relu_masks=None):
    """Runs the graph on `values` (name -> tensor: inputs and initializers; floating ones are
    used as they are, so parameters that require grad are differentiated). Returns every value
    the graph computed, by name.

    `relu_masks` (output name -> bool tensor) makes those Relu nodes pass exactly the masked
    elements, y = x * mask: the decisions of another run imposed on this one, so that an input
    within rounding of zero that the two runs put on different sides of the kink (a difference
    of the gradient's own size, not of rounding) does not count as a disagreement."""
    env = dict(values)
    for i, node in enumerate(graph.graph.node):
        ins = [env[n] if n else None for n in node.input]
        if relu_masks and node.op_type == "Relu" and node.output[0] in relu_masks:
            env[node.output[0]] = ins[0] * relu_masks[node.output[0]].to(ins[0].dtype)
            continue
        outs = OPS.get(node.op_type)
        if outs is None or node.domain not in ("", "ai.onnx"):
            raise Unsupported(f"operator {node.domain or 'ai.onnx'}.{node.op_type} "
                              f"(node '{node.name}')")
        ctx = Context(node, graph.opset, train, dtype)
        try:
            result = outs(ctx, *ins)
        except Unsupported:
            raise
        except Exception as e:
            raise RuntimeError(f"node '{node.name}' ({node.op_type}): {e}") from e
        if not isinstance(result, (list, tuple)):
            result = [result]
        for name, v in zip(node.output, result):
            if name:
                env[name] = v
    return env


class Context:
    def __init__(self, node, opset, train, dtype):
        self.node = node
        self.a = attrs_of(node)
        self.opset = opset
        self.train = train
        self.dtype = dtype
        self.noutputs = len(node.output)

    def get(self, name, default=None):
        v = self.a.get(name, default)
        return _s(v)


OPS = {}


def op(*names):
    def register(fn):
        for n in names:
            OPS[n] = fn
        return fn
    return register


def unary(name, fn):
    OPS[name] = lambda c, x: fn(x)


for _name, _fn in {
        "Relu": F.relu, "Sigmoid": torch.sigmoid, "Tanh": torch.tanh, "Erf": torch.erf,
        "Sqrt": torch.sqrt, "Exp": torch.exp, "Log": torch.log, "Abs": torch.abs,
        "Neg": torch.neg, "Reciprocal": torch.reciprocal, "Sin": torch.sin, "Cos": torch.cos,
        "Tan": torch.tan, "Asin": torch.asin, "Acos": torch.acos, "Atan": torch.atan,
        "Sinh": torch.sinh, "Cosh": torch.cosh, "Asinh": torch.asinh, "Acosh": torch.acosh,
        "Atanh": torch.atanh, "Softsign": F.softsign, "Mish": F.mish,
        "Floor": torch.floor, "Ceil": torch.ceil, "Sign": torch.sign, "Not": torch.logical_not,
        "Round": torch.round, "Identity": lambda x: x}.items():
    unary(_name, _fn)


@op("Softplus")
def _softplus(c, x):
    return torch.log1p(torch.exp(-x.abs())) + torch.clamp(x, min=0)


@op("LeakyRelu")
def _leaky(c, x):
    return F.leaky_relu(x, c.get("alpha", 0.01))


@op("Elu")
def _elu(c, x):
    return F.elu(x, c.get("alpha", 1.0))


@op("Celu")
def _celu(c, x):
    return F.celu(x, c.get("alpha", 1.0))


@op("Selu")
def _selu(c, x):
    alpha, gamma = c.get("alpha", 1.67326319217681884765625), c.get("gamma",
                                                                     1.05070102214813232421875)
    return gamma * torch.where(x > 0, x, alpha * (torch.exp(x) - 1))


@op("HardSigmoid")
def _hsig(c, x):
    return torch.clamp(c.get("alpha", 0.2) * x + c.get("beta", 0.5), 0, 1)


@op("HardSwish")
def _hswish(c, x):
    return x * torch.clamp(x / 6 + 0.5, 0, 1)


@op("ThresholdedRelu")
def _trelu(c, x):
    return torch.where(x > c.get("alpha", 1.0), x, torch.zeros_like(x))


@op("Shrink")
def _shrink(c, x):
    bias, lambd = c.get("bias", 0.0), c.get("lambd", 0.5)
    return torch.where(x < -lambd, x + bias, torch.where(x > lambd, x - bias, torch.zeros_like(x)))


@op("Gelu")
def _gelu(c, x):
    return F.gelu(x, approximate=c.get("approximate", "none"))


@op("Clip")
def _clip(c, x, lo=None, hi=None):
    if c.opset < 11:
        lo, hi = c.a.get("min"), c.a.get("max")
    lo = lo.reshape(()) if torch.is_tensor(lo) else lo
    hi = hi.reshape(()) if torch.is_tensor(hi) else hi
    # ONNX: min(max(x, lo), hi); torch.clamp's gradient passes where lo <= x <= hi.
    return torch.clamp(x, min=lo, max=hi)


@op("Pow")
def _pow(c, x, y):
    if not x.is_floating_point():
        return torch.pow(x, y)
    return torch.pow(x, y.to(x.dtype) if y.is_floating_point() else y)


def binary(name, fn):
    OPS[name] = lambda c, a, b: fn(a, b)


for _name, _fn in {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul,
                   "Equal": torch.eq, "Less": torch.lt, "Greater": torch.gt,
                   "LessOrEqual": torch.le, "GreaterOrEqual": torch.ge,
                   "And": torch.logical_and, "Or": torch.logical_or,
                   "Xor": torch.logical_xor}.items():
    binary(_name, _fn)


@op("Div")
def _div(c, a, b):
    if a.is_floating_point():
        return a / b
    return torch.div(a, b, rounding_mode="trunc")


@op("Mod")
def _mod(c, a, b):
    return torch.fmod(a, b) if c.get("fmod", 0) else torch.remainder(a, b)


@op("Sum")
def _sum(c, *xs):
    out = xs[0]
    for x in xs[1:]:
        out = out + x
    return out


@op("Max")
def _max(c, *xs):
    out = xs[0]
    for x in xs[1:]:
        out = torch.maximum(out, x)
    return out


@op("Min")
def _min(c, *xs):
    out = xs[0]
    for x in xs[1:]:
        out = torch.minimum(out, x)
    return out


@op("Mean")
def _mean(c, *xs):
    return _sum(c, *xs) / len(xs)


@op("Where")
def _where(c, cond, a, b):
    return torch.where(cond.bool(), a, b)


@op("Constant")
def _constant(c):
    a = c.a
    if "value" in a:
        return tensor_of(a["value"], c.dtype)
    if "value_float" in a:
        return torch.tensor(a["value_float"], dtype=c.dtype)
    if "value_floats" in a:
        return torch.tensor(list(a["value_floats"]), dtype=c.dtype)
    if "value_int" in a:
        return torch.tensor(a["value_int"], dtype=torch.int64)
    if "value_ints" in a:
        return torch.tensor(list(a["value_ints"]), dtype=torch.int64)
    raise Unsupported(f"Constant without a numeric value (node '{c.node.name}')")


@op("ConstantOfShape")
def _const_of_shape(c, shape):
    v = c.a.get("value")
    fill = tensor_of(v, c.dtype).reshape(-1)[0] if v is not None else torch.tensor(0.0,
                                                                                    dtype=c.dtype)
    return torch.full(ints(shape), fill.item(), dtype=fill.dtype)


@op("Cast")
def _cast(c, x):
    to = TORCH_OF_ONNX[c.a["to"]]
    if to in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        to = c.dtype if to in (torch.float32, torch.float64) else to
    return x.to(to)


@op("CastLike")
def _cast_like(c, x, like):
    return x.to(like.dtype)


@op("Shape")
def _shape(c, x):
    s = list(x.shape)
    start, end = c.get("start", 0), c.get("end", len(s))
    return torch.tensor(s[start:end] if "start" in c.a or "end" in c.a else s, dtype=torch.int64)


@op("Size")
def _size(c, x):
    return torch.tensor(x.numel(), dtype=torch.int64)


@op("Range")
def _range(c, start, limit, delta):
    return torch.arange(start.item(), limit.item(), delta.item(),
                        dtype=start.dtype if not start.is_floating_point() else c.dtype)


@op("MatMul")
def _matmul(c, a, b):
    return torch.matmul(a, b)


@op("Gemm")
def _gemm(c, a, b, bias=None):
    if c.get("transA", 0):
        a = a.t()
    if c.get("transB", 0):
        b = b.t()
    y = c.get("alpha", 1.0) * (a @ b)
    if bias is not None:
        y = y + c.get("beta", 1.0) * bias
    return y


@op("Conv")
def _conv(c, x, w, b=None):
    dims = x.dim() - 2
    kernel = list(w.shape[2:])
    x, _, _ = conv_padding(x, c.a, kernel, dims)
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[dims]
    return fn(x, w, b, stride=c.a.get("strides", [1] * dims),
              dilation=c.a.get("dilations", [1] * dims), groups=c.get("group", 1))


def pool_output_pads(spatial, kernel, strides, dil, pads_b, pads_e, ceil):
    """Extra end padding so that a floor-mode torch pool yields ONNX's ceil_mode output size."""
    extra = []
    for i in range(len(kernel)):
        eff = (kernel[i] - 1) * dil[i] + 1
        total = spatial[i] + pads_b[i] + pads_e[i] - eff
        out = (-(-total // strides[i]) if ceil else total // strides[i]) + 1
        if ceil and (out - 1) * strides[i] >= spatial[i] + pads_b[i]:
            out -= 1
        need = (out - 1) * strides[i] + eff - (spatial[i] + pads_b[i] + pads_e[i])
        extra.append(max(0, need))
    return extra


@op("MaxPool")
def _maxpool(c, x):
    dims = x.dim() - 2
    kernel = c.a["kernel_shape"]
    strides = c.a.get("strides", [1] * dims)
    dil = c.a.get("dilations", [1] * dims)
    spatial = list(x.shape[2:])
    x, pb, pe = conv_padding(x, c.a, kernel, dims, pad_value=-math.inf)
    extra = pool_output_pads(spatial, kernel, strides, dil, pb, pe, c.get("ceil_mode", 0))
    if any(extra):
        flat = []
        for i in reversed(range(dims)):
            flat += [0, extra[i]]
        x = F.pad(x, flat, value=-math.inf)
    fn = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[dims]
    if c.noutputs > 1:
        raise Unsupported("MaxPool's Indices output")
    return fn(x, kernel, strides, 0, dil)


@op("AveragePool")
def _avgpool(c, x):
    dims = x.dim() - 2
    kernel = c.a["kernel_shape"]
    strides = c.a.get("strides", [1] * dims)
    spatial = list(x.shape[2:])
    ones = torch.ones_like(x[:1, :1])
    xp, pb, pe = conv_padding(x, c.a, kernel, dims)
    # count_include_pad=0: divide each window by the number of real elements in it.
    op_pads = pb + pe
    extra = pool_output_pads(spatial, kernel, strides, [1] * dims, pb, pe, c.get("ceil_mode", 0))
    flat = []
    for i in reversed(range(dims)):
        flat += [0, extra[i]]
    fn = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[dims]
    summed = fn(F.pad(xp, flat), kernel, strides, 0) * float(np.prod(kernel))
    if c.get("count_include_pad", 0):
        mask = F.pad(F.pad(ones, [p for i in reversed(range(dims))
                                  for p in (pb[i], pe[i])], value=1.0), flat)
    else:
        mask = F.pad(F.pad(ones, [p for i in reversed(range(dims))
                                  for p in (pb[i], pe[i])]), flat)
    counts = fn(mask, kernel, strides, 0) * float(np.prod(kernel))
    del op_pads
    return summed / counts


@op("GlobalAveragePool")
def _gap(c, x):
    return x.mean(dim=tuple(range(2, x.dim())), keepdim=True)


@op("GlobalMaxPool")
def _gmp(c, x):
    return x.amax(dim=tuple(range(2, x.dim())), keepdim=True)


@op("BatchNormalization")
def _batchnorm(c, x, scale, bias, mean, var):
    eps = c.get("epsilon", 1e-5)
    momentum = c.get("momentum", 0.9)
    training = c.get("training_mode", 0) == 1 or (c.opset < 14 and c.noutputs == 5)
    shape = [1, -1] + [1] * (x.dim() - 2)
    if not training:
        # Written out, so that every input (a trainable mean or variance too) has a gradient.
        return (x - mean.reshape(shape)) / torch.sqrt(var.reshape(shape) + eps) * \
            scale.reshape(shape) + bias.reshape(shape)
    axes = [0] + list(range(2, x.dim()))
    bm = x.mean(dim=axes)
    bv = x.var(dim=axes, unbiased=False)
    y = (x - bm.reshape(shape)) / torch.sqrt(bv.reshape(shape) + eps) * scale.reshape(shape) + \
        bias.reshape(shape)
    running_mean = mean * momentum + bm.detach() * (1 - momentum)
    running_var = var * momentum + bv.detach() * (1 - momentum)
    outs = [y, running_mean, running_var]
    if c.noutputs == 5:
        outs += [bm.detach(), bv.detach()]
    return outs[:c.noutputs]


@op("InstanceNormalization")
def _instnorm(c, x, scale, bias):
    axes = tuple(range(2, x.dim()))
    m = x.mean(dim=axes, keepdim=True)
    v = x.var(dim=axes, unbiased=False, keepdim=True)
    shape = [1, -1] + [1] * (x.dim() - 2)
    return (x - m) / torch.sqrt(v + c.get("epsilon", 1e-5)) * scale.reshape(shape) + \
        bias.reshape(shape)


@op("LayerNormalization")
def _layernorm(c, x, scale, bias=None):
    axis = norm_axis(c.get("axis", -1), x.dim())
    axes = tuple(range(axis, x.dim()))
    m = x.mean(dim=axes, keepdim=True)
    v = ((x - m) ** 2).mean(dim=axes, keepdim=True)
    y = (x - m) / torch.sqrt(v + c.get("epsilon", 1e-5)) * scale
    return y + bias if bias is not None else y


@op("Softmax", "LogSoftmax")
def _softmax(c, x):
    log = c.node.op_type == "LogSoftmax"
    axis = c.get("axis", -1 if c.opset >= 13 else 1)
    if c.opset < 13:  # coerced to 2-D at axis
        axis = norm_axis(axis, x.dim())
        flat = x.reshape(int(np.prod(x.shape[:axis])), -1)
        y = F.log_softmax(flat, 1) if log else F.softmax(flat, 1)
        return y.reshape(x.shape)
    return F.log_softmax(x, axis) if log else F.softmax(x, axis)


@op("Dropout")
def _dropout(c, x, ratio=None, training=None):
    training = bool(training.item()) if training is not None else False
    r = float(ratio.item()) if ratio is not None else c.get("ratio", 0.5)
    if not (c.train and training) or c.opset < 12:
        outs = [x, torch.ones(x.shape, dtype=torch.bool)]
        return outs[:c.noutputs]
    keep = dropout_keep(dropout_seed(c.node.name, c.get("seed", 0)), tuple(x.shape), r)
    y = torch.where(keep, x * (1.0 / (1.0 - r)), torch.zeros_like(x))
    return [y, keep][:c.noutputs]


@op("Transpose")
def _transpose(c, x):
    perm = c.a.get("perm", list(reversed(range(x.dim()))))
    return x.permute(*perm)


@op("Reshape")
def _reshape(c, x, shape):
    s = ints(shape)
    if not c.get("allowzero", 0):
        s = [x.shape[i] if v == 0 else v for i, v in enumerate(s)]
    return x.reshape(s)


@op("Flatten")
def _flatten(c, x):
    axis = norm_axis(c.get("axis", 1), x.dim())
    return x.reshape(int(np.prod(x.shape[:axis])), -1)


def axes_of(c, axes_input, rank):
    if axes_input is not None:
        return [norm_axis(a, rank) for a in ints(axes_input)]
    if "axes" in c.a:
        return [norm_axis(a, rank) for a in c.a["axes"]]
    return None


@op("Squeeze")
def _squeeze(c, x, axes=None):
    ax = axes_of(c, axes, x.dim())
    if ax is None:
        return x.squeeze()
    for a in sorted(ax, reverse=True):
        x = x.squeeze(a)
    return x


@op("Unsqueeze")
def _unsqueeze(c, x, axes=None):
    rank = x.dim() + len(ints(axes) if axes is not None else c.a["axes"])
    for a in sorted(axes_of(c, axes, rank)):
        x = x.unsqueeze(a)
    return x


@op("Expand")
def _expand(c, x, shape):
    s = ints(shape)
    rank = max(len(s), x.dim())
    s = [1] * (rank - len(s)) + s
    xs = [1] * (rank - x.dim()) + list(x.shape)
    target = [max(a, b) if a == 1 or b == 1 else b for a, b in zip(xs, s)]
    return x.reshape(xs).expand(target)


@op("Trilu")
def _trilu(c, x, k=None):
    k = int(k.item()) if k is not None else 0
    return torch.triu(x, k) if c.get("upper", 1) else torch.tril(x, k)


@op("Tile")
def _tile(c, x, repeats):
    return x.repeat(*ints(repeats))


@op("Concat")
def _concat(c, *xs):
    xs = [x for x in xs if x is not None]
    return torch.cat(xs, dim=norm_axis(c.a["axis"], xs[0].dim()))


@op("Split")
def _split(c, x, split=None):
    axis = norm_axis(c.get("axis", 0), x.dim())
    if split is not None:
        sizes = ints(split)
    elif "split" in c.a:
        sizes = list(c.a["split"])
    else:
        n = c.get("num_outputs", c.noutputs)
        size = -(-x.shape[axis] // n)
        sizes = [size] * (n - 1) + [x.shape[axis] - size * (n - 1)]
    return list(torch.split(x, sizes, dim=axis))


@op("Slice")
def _slice(c, x, starts=None, ends=None, axes=None, steps=None):
    if c.opset < 10:
        st, en = c.a["starts"], c.a["ends"]
        ax = c.a.get("axes", list(range(len(st))))
        sp = [1] * len(st)
    else:
        st, en = ints(starts), ints(ends)
        ax = ints(axes) if axes is not None else list(range(len(st)))
        sp = ints(steps) if steps is not None else [1] * len(st)
    index = [slice(None)] * x.dim()
    flips = []
    for s, e, a, p in zip(st, en, ax, sp):
        a = norm_axis(a, x.dim())
        n = x.shape[a]
        if p > 0:
            s = max(0, min(n, s + n if s < 0 else s))
            e = max(0, min(n, e + n if e < 0 else e))
            index[a] = slice(s, e, p)
        else:  # negative steps: torch has none; slice the reversed axis
            s = max(-1, min(n - 1, s + n if s < 0 else s))
            e = max(-1, min(n - 1, e + n if e < 0 else e))
            flips.append(a)
            index[a] = slice(n - 1 - s, n - 1 - e, -p)
    if flips:
        x = torch.flip(x, flips)
    return x[tuple(index)]


@op("Pad")
def _pad(c, x, pads=None, value=None, axes=None):
    p = ints(pads) if pads is not None else list(c.a["pads"])
    rank = x.dim()
    ax = ints(axes) if axes is not None else list(range(rank))
    ax = [norm_axis(a, rank) for a in ax]
    begin, end = [0] * rank, [0] * rank
    for i, a in enumerate(ax):
        begin[a], end[a] = p[i], p[i + len(ax)]
    mode = c.get("mode", "constant")
    v = float(value.item()) if value is not None and value.numel() else c.get("value", 0.0)
    flat = []
    for i in reversed(range(rank)):
        flat += [begin[i], end[i]]
    if mode == "constant":
        return F.pad(x, flat, value=v)
    raise Unsupported(f"Pad in mode {mode}")


@op("Gather")
def _gather(c, data, index):
    axis = norm_axis(c.get("axis", 0), data.dim())
    idx = torch.where(index < 0, index + data.shape[axis], index).long()
    out = torch.index_select(data, axis, idx.reshape(-1))
    return out.reshape(list(data.shape[:axis]) + list(idx.shape) + list(data.shape[axis + 1:]))


@op("GatherElements")
def _gather_elements(c, data, index):
    axis = norm_axis(c.get("axis", 0), data.dim())
    idx = torch.where(index < 0, index + data.shape[axis], index).long()
    return torch.gather(data, axis, idx)


def reduce_axes(c, x, axes_input):
    if c.node.op_type == "ReduceSum" and c.opset >= 13 or c.opset >= 18:
        ax = ints(axes_input) if axes_input is not None and axes_input.numel() else None
    else:
        ax = list(c.a["axes"]) if "axes" in c.a else None
    if ax is None:
        if c.get("noop_with_empty_axes", 0):
            return []
        return list(range(x.dim()))
    return [norm_axis(a, x.dim()) for a in ax]


@op("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2",
    "ReduceSumSquare", "ReduceLogSumExp")
def _reduce(c, x, axes=None):
    ax = reduce_axes(c, x, axes)
    keep = bool(c.get("keepdims", 1))
    if not ax:
        return x
    t = c.node.op_type
    if t == "ReduceSum":
        return x.sum(dim=ax, keepdim=keep)
    if t == "ReduceMean":
        return x.mean(dim=ax, keepdim=keep)
    if t == "ReduceMax":
        return x.amax(dim=ax, keepdim=keep)
    if t == "ReduceMin":
        return x.amin(dim=ax, keepdim=keep)
    if t == "ReduceSumSquare":
        return (x * x).sum(dim=ax, keepdim=keep)
    if t == "ReduceL2":
        return torch.sqrt((x * x).sum(dim=ax, keepdim=keep))
    if t == "ReduceLogSumExp":
        return torch.logsumexp(x, dim=ax, keepdim=keep)
    out = x
    for a in sorted(ax, reverse=True):
        out = out.prod(dim=a, keepdim=keep)
    return out


@op("CumSum")
def _cumsum(c, x, axis):
    a = norm_axis(int(axis.item()), x.dim())
    if c.get("reverse", 0):
        x = torch.flip(x, [a])
    if c.get("exclusive", 0):
        pad = [0, 0] * (x.dim() - 1 - a) + [1, 0]
        y = torch.cumsum(F.pad(x, pad), a).narrow(a, 0, x.shape[a])
    else:
        y = torch.cumsum(x, a)
    return torch.flip(y, [a]) if c.get("reverse", 0) else y


@op("TopK")
def _topk(c, x, k):
    axis = norm_axis(c.get("axis", -1), x.dim())
    values, indices = torch.topk(x, int(k.item()), dim=axis, largest=bool(c.get("largest", 1)),
                                 sorted=True)
    return [values, indices]


@op("NegativeLogLikelihoodLoss")
def _nll(c, x, target, weight=None):
    red = c.get("reduction", "mean")
    ignore = c.a.get("ignore_index", -100)
    if x.dim() > 2:  # (N, C, d1, ...) as torch takes it
        pass
    return F.nll_loss(x, target.long(), weight=weight, ignore_index=ignore, reduction=red)


@op("SoftmaxCrossEntropyLoss")
def _sce(c, x, target, weight=None):
    red = c.get("reduction", "mean")
    ignore = c.a.get("ignore_index", -100)
    logp = F.log_softmax(x, 1)
    loss = F.nll_loss(logp, target.long(), weight=weight, ignore_index=ignore, reduction=red)
    return [loss, logp][:c.noutputs]


@op("OneHot")
def _onehot(c, indices, depth, values):
    d = int(depth.reshape(-1)[0].item())
    idx = torch.where(indices < 0, indices + d, indices).long()
    axis = c.get("axis", -1)
    oh = F.one_hot(idx.clamp(0, d - 1), d).bool() & ((idx >= 0) & (idx < d)).unsqueeze(-1)
    out = torch.where(oh, values[1], values[0])
    rank = out.dim()
    axis = norm_axis(axis, rank)
    return out.movedim(-1, axis)


# ---- recurrent layers (ONNX gate orders: LSTM i, o, f, c; GRU z, r, h) ----

def rnn_directions(c):
    d = c.get("direction", "forward")
    return ["forward"] if d == "forward" else ["reverse"] if d == "reverse" else \
        ["forward", "reverse"]


def check_default_activations(c, defaults):
    acts = c.a.get("activations")
    if acts and [_s(a).lower() for a in acts] != defaults * (len(acts) // len(defaults)):
        raise Unsupported(f"{c.node.op_type} activations {acts}")
    if c.get("clip") is not None or c.get("input_forget", 0):
        raise Unsupported(f"{c.node.op_type} clip / input_forget")
    if c.get("layout", 0):
        raise Unsupported(f"{c.node.op_type} layout 1")


@op("LSTM")
def _lstm(c, x, w, r, b=None, seq_lens=None, h0=None, c0=None, p=None):
    check_default_activations(c, ["sigmoid", "tanh", "tanh"])
    if p is not None:
        raise Unsupported("LSTM peepholes")
    hidden = c.a["hidden_size"]
    S, B = x.shape[0], x.shape[1]
    ys, hs, cs = [], [], []
    for d, direction in enumerate(rnn_directions(c)):
        wd, rd = w[d], r[d]
        bias = b[d][:4 * hidden] + b[d][4 * hidden:] if b is not None else 0
        h = h0[d] if h0 is not None else x.new_zeros(B, hidden)
        cell = c0[d] if c0 is not None else x.new_zeros(B, hidden)
        outs = [None] * S
        order = range(S) if direction == "forward" else reversed(range(S))
        for t in order:
            gates = x[t] @ wd.t() + h @ rd.t() + bias
            i, o, f, g = gates.split(hidden, dim=1)
            i, o, f, g = torch.sigmoid(i), torch.sigmoid(o), torch.sigmoid(f), torch.tanh(g)
            cell = f * cell + i * g
            h = o * torch.tanh(cell)
            outs[t] = h
        ys.append(torch.stack(outs))
        hs.append(h)
        cs.append(cell)
    y = torch.stack(ys, dim=1)
    return [y, torch.stack(hs), torch.stack(cs)][:c.noutputs]


@op("GRU")
def _gru(c, x, w, r, b=None, seq_lens=None, h0=None):
    check_default_activations(c, ["sigmoid", "tanh"])
    hidden = c.a["hidden_size"]
    lbr = c.get("linear_before_reset", 0)
    S, B = x.shape[0], x.shape[1]
    ys, hs = [], []
    for d, direction in enumerate(rnn_directions(c)):
        wd, rd = w[d], r[d]
        wb = b[d][:3 * hidden] if b is not None else x.new_zeros(3 * hidden)
        rb = b[d][3 * hidden:] if b is not None else x.new_zeros(3 * hidden)
        h = h0[d] if h0 is not None else x.new_zeros(B, hidden)
        outs = [None] * S
        order = range(S) if direction == "forward" else reversed(range(S))
        wz, wr, wh = wd.split(hidden, 0)
        rz, rr, rh = rd.split(hidden, 0)
        bwz, bwr, bwh = wb.split(hidden)
        brz, brr, brh = rb.split(hidden)
        for t in order:
            z = torch.sigmoid(x[t] @ wz.t() + h @ rz.t() + bwz + brz)
            rg = torch.sigmoid(x[t] @ wr.t() + h @ rr.t() + bwr + brr)
            if lbr:
                hh = torch.tanh(x[t] @ wh.t() + rg * (h @ rh.t() + brh) + bwh)
            else:
                hh = torch.tanh(x[t] @ wh.t() + (rg * h) @ rh.t() + brh + bwh)
            h = (1 - z) * hh + z * h
            outs[t] = h
        ys.append(torch.stack(outs))
        hs.append(h)
    return [torch.stack(ys, dim=1), torch.stack(hs)][:c.noutputs]


@op("RNN")
def _rnn(c, x, w, r, b=None, seq_lens=None, h0=None):
    check_default_activations(c, ["tanh"])
    hidden = c.a["hidden_size"]
    S, B = x.shape[0], x.shape[1]
    ys, hs = [], []
    for d, direction in enumerate(rnn_directions(c)):
        bias = b[d][:hidden] + b[d][hidden:] if b is not None else 0
        h = h0[d] if h0 is not None else x.new_zeros(B, hidden)
        outs = [None] * S
        order = range(S) if direction == "forward" else reversed(range(S))
        for t in order:
            h = torch.tanh(x[t] @ w[d].t() + h @ r[d].t() + bias)
            outs[t] = h
        ys.append(torch.stack(outs))
        hs.append(h)
    return [torch.stack(ys, dim=1), torch.stack(hs)][:c.noutputs]


def tensor_of(proto, dtype=torch.float32):
    """A TensorProto as a torch tensor; floating tensors in `dtype`."""
    a = numpy_helper.to_array(proto)
    t = torch.from_numpy(np.array(a, copy=True))
    if t.is_floating_point() and t.dtype in (torch.float32, torch.float64):
        t = t.to(dtype)
    return t


def planner_loss(outputs):
    """The loss the planner trains against: 0.5 * mean(y^2) summed over the floating outputs."""
    total = None
    for y in outputs:
        if not is_float(y) or not y.requires_grad:
            continue
        term = 0.5 * (y * y).mean()
        total = term if total is None else total + term
    return total
