#!/usr/bin/python3
"""Exports the training-mode models the accuracy benchmark needs, graph only.

Built here from their papers' shapes with Debian's python3-torch (1.13) and
python3-torchvision; nothing is downloaded. Each model is exported with
torch.onnx.export(training=TRAINING, do_constant_folding=False), opset 15, a
symbolic batch dimension, and its initializers turned into external-data
references to a file that is never written (the planner never reads weights).

usage: scripts/export_train_models.py OUT_DIR [NAME ...]
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import graph_only  # noqa: E402  (the shared helpers next to this script)

try:
    import onnx
    import torch
    import torchvision
    from torch import nn
except ImportError as e:  # the caller turns this into a visible skip
    print(f"export_train_models: {e}", file=sys.stderr)
    sys.exit(77)


class BertForQuestionAnswering(nn.Module):
    """BERT (Devlin et al. 2019) as DeepLearningExamples fine-tunes it on SQuAD: token,
    position and segment embeddings, post-LN encoder layers with GELU, a start/end head."""

    def __init__(self, layers, hidden, heads, ffn, vocab=30528, positions=512):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(positions, hidden)
        self.segment = nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(0.1)
        layer = nn.TransformerEncoderLayer(hidden, heads, ffn, dropout=0.1, activation="gelu",
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.qa = nn.Linear(hidden, 2)

    def forward(self, input_ids, token_type_ids):
        seq = input_ids.shape[1]
        pos = torch.arange(seq, device=input_ids.device).unsqueeze(0)
        x = self.word(input_ids) + self.position(pos) + self.segment(token_type_ids)
        x = self.dropout(self.norm(x))
        return self.qa(self.encoder(x))


def resnext101_32x4d():
    # ResNeXt-101 32x4d (Xie et al. 2017): bottlenecks of width 4 per group, 32 groups.
    from torchvision.models.resnet import Bottleneck, ResNet
    return ResNet(Bottleneck, [3, 4, 23, 3], groups=32, width_per_group=4)


class SqueezeExcite(nn.Module):
    """Squeeze-and-excitation (Hu et al. 2018) as DeepLearningExamples' SE-ResNeXt runs it:
    global average, a 1x1 convolution down to `squeeze` channels, ReLU, a 1x1 convolution back,
    sigmoid; the block's output is residual + out * gate, then ReLU."""

    def __init__(self, channels, squeeze=16):
        super().__init__()
        self.reduce = nn.Conv2d(channels, squeeze, 1)
        self.expand = nn.Conv2d(squeeze, channels, 1)

    def forward(self, x):
        s = torch.nn.functional.adaptive_avg_pool2d(x, 1)
        return torch.sigmoid(self.expand(torch.relu(self.reduce(s))))


def se_resnext101_32x4d():
    # ResNeXt-101 32x4d with a squeeze-and-excitation gate in every bottleneck (16 channels).
    from torchvision.models.resnet import Bottleneck, ResNet

    class SEBottleneck(Bottleneck):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.se = SqueezeExcite(self.conv3.out_channels)

        def forward(self, x):
            identity = self.downsample(x) if self.downsample is not None else x
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            return self.relu(identity + out * self.se(out))

    return ResNet(SEBottleneck, [3, 4, 23, 3], groups=32, width_per_group=4)


def image_input(batch=2):
    return (torch.randn(batch, 3, 224, 224),), ["input"], {"input": {0: "batch"}}


def token_inputs(seq, batch=2):
    ids = torch.randint(0, 1000, (batch, seq))
    types = torch.zeros(batch, seq, dtype=torch.int64)
    axes = {"input_ids": {0: "batch"}, "token_type_ids": {0: "batch"}}
    return (ids, types), ["input_ids", "token_type_ids"], axes


MODELS = {
    "resnet50_train": lambda: (torchvision.models.resnet50(weights=None), image_input()),
    "resnext101_32x4d_train": lambda: (resnext101_32x4d(), image_input()),
    "se_resnext101_32x4d_train": lambda: (se_resnext101_32x4d(), image_input()),
    "bert_large_squad_train": lambda: (BertForQuestionAnswering(24, 1024, 16, 4096),
                                       token_inputs(384)),
}


def export(name, out_dir):
    torch.manual_seed(0)
    model, (args, input_names, axes) = MODELS[name]()
    model.train()
    path = os.path.join(out_dir, name + ".onnx")
    with tempfile.TemporaryDirectory() as tmp:
        full = os.path.join(tmp, name + ".onnx")
        torch.onnx.export(model, args, full, input_names=input_names, output_names=["output"],
                          dynamic_axes={**axes, "output": {0: "batch"}}, opset_version=15,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
        proto = onnx.load(full)
    data_file = name + ".onnx.data"
    offset = 0
    for init in proto.graph.initializer:
        size = len(init.raw_data)
        if size < 64:  # small constants stay inline, as exporters keep them
            continue
        graph_only.point_to_external(onnx, init, data_file, offset, size)
        offset += size
    graph_only.save(onnx, proto, path)


def main():
    return graph_only.main("export_train_models", __doc__, MODELS, export, sorted(MODELS))


if __name__ == "__main__":
    sys.exit(main())
