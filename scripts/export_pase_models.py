#!/usr/bin/python3
"""Exports PaSE's five benchmark workloads as graph-only ONNX files.

PaSE (Elango, "PaSE: Parallelization Strategies for Efficient DNN Training", IPDPS
2021; github.com/baidu-research/PaSE) plans AlexNet, ResNet-101, Inception-v3, a
two-layer LSTM language model (RNNLM) and a Transformer (NMT). The graphs below follow
its graph.py (the input graphs of its scheduler.py); the batch sizes are the paper's
(docs/PaSE_ipdps2021.pdf there: 128 for the CNNs, 64 for RNNLM and Transformer).

Each model is built with Debian's python3-torch (1.13) and python3-torchvision (no
weights downloaded), exported in eval mode at opset 13 with static shapes, and its
large initializers are then turned into external-data references to a file that is
never written: the planner reads shapes only.

usage: scripts/export_pase_models.py OUT_DIR [NAME ...]
"""
import math
import os
import sys
import tempfile

try:
    import onnx
    import torch
    import torchvision
    from torch import nn
except ImportError as e:  # the caller turns this into a visible skip
    print(f"export_pase_models: {e}", file=sys.stderr)
    sys.exit(77)

CNN_BATCH = 128  # the paper, section IV (Experimental results)
SEQ_BATCH = 64


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

    def __init__(self, vocab=50000, width=512, heads=8, ffn=2048, layers=6, seq=256):
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


def images(side):
    return (torch.randn(CNN_BATCH, 3, side, side),), ["input"]


def tokens(names, seq=256, vocab=1000):
    return tuple(torch.randint(0, vocab, (SEQ_BATCH, seq)) for _ in names), list(names)


MODELS = {
    "pase_alexnet": lambda: (pase_alexnet(), images(227)),
    # graph.py ResNet101(b): torchvision's bottleneck layout [3, 4, 23, 3] on 227x227. The
    # paper evaluates the other four only; 128 is its CNN batch and scheduler.py's default.
    "pase_resnet101": lambda: (torchvision.models.resnet101(weights=None), images(227)),
    # graph.py Inception3(b): torchvision's modules A-E, no auxiliary head, 299x299.
    "pase_inception_v3": lambda: (torchvision.models.inception_v3(
        weights=None, aux_logits=False, init_weights=False), images(299)),
    "pase_rnnlm": lambda: (RNNLM(), tokens(["input_ids"])),
    "pase_transformer": lambda: (Transformer(), tokens(["src_ids", "tgt_ids"])),
}


def strip_weights(proto, data_file):
    """Points every initializer of 64 bytes or more at data_file (never written)."""
    offset = 0
    for init in proto.graph.initializer:
        size = len(init.raw_data)
        if size < 64:  # small constants stay inline, as exporters keep them
            continue
        init.ClearField("raw_data")
        init.data_location = onnx.TensorProto.EXTERNAL
        for key, value in (("location", data_file), ("offset", str(offset)),
                           ("length", str(size))):
            entry = init.external_data.add()
            entry.key, entry.value = key, value
        offset += size


def export(name, out_dir):
    torch.manual_seed(0)
    model, (args, input_names) = MODELS[name]()
    model.eval()
    path = os.path.join(out_dir, name + ".onnx")
    with tempfile.TemporaryDirectory() as tmp:
        full = os.path.join(tmp, name + ".onnx")
        # Without grad the trace keeps no activations (ResNet-101 at batch 128 otherwise
        # holds ~19 GB), but the Transformer keeps it: under no_grad its eval-mode layers
        # take PyTorch's fused fast path, which has no ONNX export.
        with torch.set_grad_enabled(name == "pase_transformer"):
            torch.onnx.export(model, args, full, input_names=input_names,
                              output_names=["logits"], opset_version=13,
                              training=torch.onnx.TrainingMode.EVAL)
        proto = onnx.load(full)
    strip_weights(proto, name + ".onnx.data")
    part = path + ".part"
    onnx.save(proto, part)
    os.replace(part, path)
    print(f"{path}: {len(proto.graph.node)} nodes")


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out_dir = sys.argv[1]
    names = sys.argv[2:] or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        print(f"export_pase_models: unknown model '{unknown[0]}' (known: {', '.join(MODELS)})",
              file=sys.stderr)
        return 2
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        if not os.path.exists(os.path.join(out_dir, name + ".onnx")):
            export(name, out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
