"""What the graph-only exporters (export_train_models.py, export_pase_models.py) share: pointing
an initializer at an external-data file that is never written, saving atomically, and the
command line `SCRIPT OUT_DIR [NAME ...]`."""
import os
import sys


def point_to_external(onnx, init, data_file, offset, size):
    """Makes `init` an external-data reference of `size` bytes at `offset` in `data_file`."""
    init.ClearField("raw_data")
    init.data_location = onnx.TensorProto.EXTERNAL
    for key, value in (("location", data_file), ("offset", str(offset)), ("length", str(size))):
        entry = init.external_data.add()
        entry.key, entry.value = key, value


def save(onnx, proto, path):
    """Writes `proto` to `path` through a temporary file, so no half-written model remains."""
    part = path + ".part"
    onnx.save(proto, part)
    os.replace(part, path)
    print(f"{path}: {len(proto.graph.node)} nodes")


def main(prog, doc, models, export, names_default):
    """`prog OUT_DIR [NAME ...]`: exports each named model (default `names_default`) not yet in
    OUT_DIR with export(name, out_dir). Exit 2 on a usage error or an unknown name."""
    if len(sys.argv) < 2:
        print(doc.strip(), file=sys.stderr)
        return 2
    out_dir = sys.argv[1]
    names = sys.argv[2:] or names_default
    unknown = [n for n in names if n not in models]
    if unknown:
        print(f"{prog}: unknown model '{unknown[0]}' (known: {', '.join(names_default)})",
              file=sys.stderr)
        return 2
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        if not os.path.exists(os.path.join(out_dir, name + ".onnx")):
            export(name, out_dir)
    return 0
