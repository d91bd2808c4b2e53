#!/usr/bin/env python3
"""Exports architectures of the Hugging Face `transformers` library, as users export them.

Each model is built from a small configuration with random weights (nothing is downloaded),
put in eval mode and exported with torch.onnx.export (opset 17, weights inline, batch 2), its
`logits` the one output, so that scripts/ort_compare.py can run it in onnxruntime and in the
planner's cpu runtime. Runs in the virtual environment of scripts/python_env.sh, which installs
transformers beside Debian's python3-torch; exit 77 where transformers is not importable.

usage: export_hf_models.py OUT_DIR [NAME ...]
"""
import os
import sys
import warnings

try:
    import onnx  # before torch, which would otherwise load Debian's older onnx protobufs
    import torch
    import transformers as hf
except ImportError as e:
    print(f"SKIPPED: export_hf_models: {e}")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import graph_only  # noqa: E402  (atomic saves and the command line)

# name: (configuration, model class, inputs). Widths small enough for a cpu, every structural
# feature of the architecture kept (grouped-query attention, rotary embeddings, relative
# buckets, shifted windows, ...).
TOKENS = (("input_ids", (2, 16)),)


def configs():
    return {
        "hf_llama": (hf.LlamaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=2,
                                    num_attention_heads=8, num_key_value_heads=2, vocab_size=1000,
                                    max_position_embeddings=128),
                     hf.LlamaForCausalLM, TOKENS),
        "hf_gpt2": (hf.GPT2Config(n_embd=256, n_layer=2, n_head=8, vocab_size=1000,
                                  n_positions=128),
                    hf.GPT2LMHeadModel, TOKENS),
        "hf_bert": (hf.BertConfig(hidden_size=256, num_hidden_layers=2, num_attention_heads=8,
                                  intermediate_size=1024, vocab_size=1000),
                    hf.BertForMaskedLM, TOKENS),
        "hf_t5": (hf.T5Config(d_model=256, d_ff=1024, num_layers=2, num_heads=8, d_kv=32,
                              vocab_size=1000),
                  hf.T5ForConditionalGeneration,
                  (("input_ids", (2, 16)), ("decoder_input_ids", (2, 8)))),
        "hf_vit": (hf.ViTConfig(hidden_size=256, num_hidden_layers=2, num_attention_heads=8,
                                intermediate_size=1024, image_size=64, patch_size=16),
                   hf.ViTForImageClassification, (("pixel_values", (2, 3, 64, 64)),)),
        "hf_convnext": (hf.ConvNextConfig(hidden_sizes=[32, 64, 128, 256], depths=[1, 1, 2, 1],
                                          image_size=64),
                        hf.ConvNextForImageClassification, (("pixel_values", (2, 3, 64, 64)),)),
        "hf_swin": (hf.SwinConfig(image_size=64, patch_size=4, embed_dim=32, depths=[2, 2],
                                  num_heads=[2, 4], window_size=4),
                    hf.SwinForImageClassification, (("pixel_values", (2, 3, 64, 64)),)),
        # Mixtral's router picks tokens per expert with torch.where (NonZero): shapes that
        # depend on the data, which a static plan cannot hold (the planner names the node).
        "hf_mixtral": (hf.MixtralConfig(hidden_size=256, intermediate_size=512,
                                        num_hidden_layers=2, num_attention_heads=8,
                                        num_key_value_heads=2, vocab_size=1000,
                                        num_local_experts=4, num_experts_per_tok=2,
                                        max_position_embeddings=128),
                       hf.MixtralForCausalLM, TOKENS),
    }


class Logits(torch.nn.Module):
    """The model called with named inputs, returning only its logits."""

    def __init__(self, model, names):
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *args):
        return self.model(**dict(zip(self.names, args))).logits


def export(name, out_dir):
    config, cls, inputs = configs()[name]
    config.use_cache = False
    torch.manual_seed(0)
    model = Logits(cls(config).eval(), [n for n, _ in inputs]).eval()
    args = tuple(torch.randn(*shape) if n == "pixel_values" else torch.randint(0, 1000, shape)
                 for n, shape in inputs)
    path = os.path.join(out_dir, name + ".onnx")
    part = path + ".tmp.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, part, opset_version=17, do_constant_folding=True,
                          input_names=[n for n, _ in inputs], output_names=["logits"])
    graph_only.save(onnx, onnx.load(part), path)
    os.remove(part)


if __name__ == "__main__":
    names = list(configs())
    sys.exit(graph_only.main("export_hf_models.py", __doc__, dict.fromkeys(names), export, names))
