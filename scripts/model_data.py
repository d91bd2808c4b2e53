"""Models and data for the cross-check scripts (ort_compare.py, torch_train_compare.py): a
graph-only model given widths and random weights, its inputs, and the planner's launcher dumps.

Written here, independently of the planner's own --shrink and initialisation, so that both
programs read the same files and neither computes the other's inputs.
"""
import os
import struct

import numpy as np
import onnx
from onnx import numpy_helper

# Inputs whose values are extents: mapped by value when shrinking (the planner's rule).
EXTENT_INPUTS = {"Reshape": 1, "Expand": 1, "ConstantOfShape": 0, "Split": 1}
RECURRENT = {"LSTM", "GRU", "RNN"}


def np_dtype(tensor_type):
    """numpy's dtype of an ONNX element type (onnx 1.12 has only onnx.mapping)."""
    if hasattr(onnx.helper, "tensor_dtype_to_np_dtype"):
        return onnx.helper.tensor_dtype_to_np_dtype(tensor_type)
    return onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[tensor_type]


def parse_map(text):
    mapping = {}
    for item in filter(None, text.split(",")):
        old, new = item.split("=")
        mapping[int(old)] = int(new)
    return mapping


def load_model(path):
    """An .onnx file (external data not read) or ONNX's textual syntax (.onnxtxt)."""
    if path.endswith(".onnxtxt"):
        from onnx import parser
        with open(path) as f:
            return parser.parse_model(f.read())
    return onnx.load(path, load_external_data=False)


def extent_names(graph):
    names = set()
    for node in graph.node:
        i = EXTENT_INPUTS.get(node.op_type)
        if i is not None and i < len(node.input):
            names.add(node.input[i])
    return names


def leading_block(values, shape):
    return values[tuple(slice(0, n) for n in shape)].copy()


def has_values(t):
    if t.data_location == onnx.TensorProto.EXTERNAL:
        return False
    n = int(np.prod(t.dims)) if len(t.dims) else 1
    if n == 0:
        return True
    try:
        return numpy_helper.to_array(t).size == n
    except ValueError:  # declared without values (`= {}` in the textual syntax)
        return False


def random_weight(shape, np_type, rng):
    """Uniform in +-sqrt(3 / fan-in) (fan-in: all but the first dimension), 1-D tensors in
    [0.5, 1.5) (norm scales and variances stay positive), scalars in +-0.1."""
    fan_in = int(np.prod(shape[1:])) if len(shape) >= 2 else 0
    if fan_in > 0:
        bound = np.sqrt(3.0 / fan_in)
        values = rng.uniform(-bound, bound, size=shape)
    elif len(shape) == 1:
        values = rng.uniform(0.5, 1.5, size=shape)
    else:
        values = rng.uniform(-0.1, 0.1, size=shape)
    return values.astype(np_type)


def shrink_tensor(t, mapping, is_extent, rng):
    """Returns `t` with its shape mapped and values: weights random, extents mapped by value,
    other constants cut to their leading block."""
    old = numpy_helper.to_array(t) if has_values(t) else None
    shape = [mapping.get(d, d) for d in t.dims]
    np_type = np_dtype(t.data_type)
    if old is None:  # a weight whose data the file does not hold: random, scaled by fan-in
        values = random_weight(shape, np_type, rng)
    elif is_extent:
        values = np.vectorize(lambda v: mapping.get(int(v), int(v)))(old).astype(old.dtype) \
            if old.size else old
    else:
        values = leading_block(old, shape) if list(old.shape) != shape else old
    return numpy_helper.from_array(values, t.name)


def shrink_model(m, mapping, seed):
    """`m` with every dimension OLD of `mapping` made NEW and random values for the float
    initializers the file does not hold (an empty mapping only fills the weights)."""
    g = m.graph
    rng = np.random.default_rng(seed)
    for vi in list(g.input) + list(g.output):
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_value"):
                d.dim_value = mapping.get(d.dim_value, d.dim_value)
    if mapping:
        del g.value_info[:]
    extents = extent_names(g)
    inits = [shrink_tensor(t, mapping, t.name in extents, rng) for t in g.initializer]
    del g.initializer[:]
    g.initializer.extend(inits)
    for node in g.node:
        for a in node.attribute:
            if node.op_type == "Constant" and a.name == "value" and mapping:
                a.t.CopyFrom(shrink_tensor(a.t, mapping, node.output[0] in extents, rng))
            elif node.op_type in RECURRENT and a.name == "hidden_size":
                a.i = mapping.get(a.i, a.i)
    return m


def index_bound(graph, name, shapes):
    """The largest valid value of an integer input: the smallest table it indexes (Gather), else 2."""
    bounds = []
    for node in graph.node:
        if node.op_type == "Gather" and len(node.input) > 1 and node.input[1] == name:
            axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
            table = shapes.get(node.input[0])
            if table:
                bounds.append(table[axis])
    return min(bounds) if bounds else 2


def make_inputs(m, batch, seed, dims=None):
    """Random values for the graph's inputs: floats standard normal, integers valid indices of
    the tables they index. Symbolic dimensions take `dims[name]`, else `batch`."""
    g = m.graph
    init_names = {t.name for t in g.initializer}
    shapes = {t.name: list(t.dims) for t in g.initializer}
    rng = np.random.default_rng(seed + 1)
    inputs = []
    for vi in g.input:
        if vi.name in init_names:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else (dims or {}).get(d.dim_param, batch)
                 for d in tt.shape.dim]
        np_type = np_dtype(tt.elem_type)
        if np.issubdtype(np_type, np.floating):
            value = rng.standard_normal(size=shape).astype(np_type)
        elif np_type == np.bool_:
            value = rng.random(size=shape) < 0.5
        else:
            value = rng.integers(0, index_bound(g, vi.name, shapes), size=shape).astype(np_type)
        inputs.append((vi.name, value))
    return inputs


def write_inputs(inputs, folder):
    os.makedirs(folder, exist_ok=True)
    for i, (n, v) in enumerate(inputs):
        with open(os.path.join(folder, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, n).SerializeToString())


def has_symbolic_dims(m):
    return any(d.HasField("dim_param") for vi in m.graph.input
               for d in vi.type.tensor_type.shape.dim)


# The launcher's --dump file (docs/codegen.md): "PLNRDUMP2\n", then per slice its name, dtype
# (ONNX's TensorProto numbering), rank, global shape, offset, shape, bytes and rounding floor.
NP_OF_DTYPE = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
               7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32,
               13: np.uint64}


def read_dump(path):
    """name -> whole tensor (numpy) of a launcher dump; slices are placed in their whole."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(b"PLNRDUMP2\n"):
        raise ValueError(f"{path}: not a launcher dump")
    at = len(b"PLNRDUMP2\n")

    def u64():
        nonlocal at
        v = struct.unpack_from("<Q", data, at)[0]
        at += 8
        return v

    out = {}
    while at < len(data):
        n = u64()
        name = data[at:at + n].decode()
        at += n
        dtype, _rank, r = u64(), u64(), u64()
        gshape = [u64() for _ in range(r)]
        offset = [u64() for _ in range(r)]
        shape = [u64() for _ in range(r)]
        nbytes = u64()
        raw = data[at:at + nbytes]
        at += nbytes
        at += 8  # the rounding floor
        if dtype == 16:  # bf16: the upper half of an f32
            vals = (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            vals = np.frombuffer(raw, NP_OF_DTYPE[dtype])
        vals = vals.reshape(shape)
        whole = out.setdefault(name, np.zeros(gshape, vals.dtype))
        whole[tuple(slice(o, o + s) for o, s in zip(offset, shape))] = vals
    return out
