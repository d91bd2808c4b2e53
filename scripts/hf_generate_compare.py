#!/usr/bin/env python3
"""Holds `planner generate hf` against the transformers library's own models.

For each small random configuration below (nothing is downloaded), the transformers model is
built with seeded random weights, its config.json written, and `planner generate hf` run on it.
Checked:
  - the parameter count the planner prints equals sum(p.numel()) of the transformers model;
  - the generated graph, given the same weights (written into its external data file, linear
    weights transposed to its [in, out] layout) and the same token ids, computes the same logits:
    `planner verify --mode infer --weights --inputs DIR` runs the whole step against the
    transformers logits (output_0.pb) and the partitioned step (2 GPUs, dp) against the whole.
Runs in the virtual environment of scripts/python_env.sh; exit 77 where transformers is not
importable.

usage: hf_generate_compare.py PLANNER WORK_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

try:
    import onnx  # before torch, which would otherwise load Debian's older onnx protobufs
    from onnx import numpy_helper
    import numpy as np
    import torch
    import transformers as hf
except ImportError as e:
    print(f"SKIPPED: hf_generate_compare: {e}")
    sys.exit(77)

BATCH, SEQ = 2, 16
# name: (transformers config class, model class, fields). Each keeps a feature the generator
# must get right: grouped-query attention, tied embeddings, attention biases, rope scaling.
CASES = {
    "llama_gqa": ("LlamaConfig", "LlamaForCausalLM",
                  dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, vocab_size=128,
                       max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=500000.0)),
    "llama_tied_bias": ("LlamaConfig", "LlamaForCausalLM",
                        dict(hidden_size=48, intermediate_size=80, num_hidden_layers=2,
                             num_attention_heads=6, num_key_value_heads=3, vocab_size=100,
                             max_position_embeddings=32, tie_word_embeddings=True,
                             attention_bias=True, rope_scaling={"type": "linear", "factor": 2.0})),
    "mistral": ("MistralConfig", "MistralForCausalLM",
                dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=8, num_key_value_heads=2, vocab_size=96,
                     max_position_embeddings=64, sliding_window=32)),
}

# The generator's initializer -> (transformers parameter, transposed).
RULES = [
    (r"tok_embeddings\.weight", "model.embed_tokens.weight", False),
    (r"layers\.(\d+)\.attention_norm\.weight", "model.layers.{}.input_layernorm.weight", False),
    (r"layers\.(\d+)\.ffn_norm\.weight", "model.layers.{}.post_attention_layernorm.weight", False),
    (r"layers\.(\d+)\.attention\.wq\.(weight|bias)", "model.layers.{}.self_attn.q_proj.{}", True),
    (r"layers\.(\d+)\.attention\.wk\.(weight|bias)", "model.layers.{}.self_attn.k_proj.{}", True),
    (r"layers\.(\d+)\.attention\.wv\.(weight|bias)", "model.layers.{}.self_attn.v_proj.{}", True),
    (r"layers\.(\d+)\.attention\.wo\.(weight|bias)", "model.layers.{}.self_attn.o_proj.{}", True),
    (r"layers\.(\d+)\.feed_forward\.w1\.weight", "model.layers.{}.mlp.gate_proj.weight", True),
    (r"layers\.(\d+)\.feed_forward\.w3\.weight", "model.layers.{}.mlp.up_proj.weight", True),
    (r"layers\.(\d+)\.feed_forward\.w2\.weight", "model.layers.{}.mlp.down_proj.weight", True),
    (r"norm\.weight", "model.norm.weight", False),
    (r"output\.weight", "lm_head.weight", True),
]


def hf_tensor(name, params):
    for pattern, target, transpose in RULES:
        m = re.fullmatch(pattern, name)
        if m:
            t = params[target.format(*m.groups())].detach().numpy().astype(np.float32)
            return t.T if transpose and t.ndim == 2 else t
    raise KeyError(f"no transformers parameter for initializer '{name}'")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def check(planner, work, name):
    config_class, model_class, fields = CASES[name]
    torch.manual_seed(0)
    config = getattr(hf, config_class)(**fields)
    model = getattr(hf, model_class)(config).eval()
    params = dict(model.named_parameters())
    if config.tie_word_embeddings:
        params["lm_head.weight"] = model.lm_head.weight
    expected_count = sum(p.numel() for p in model.parameters())
    folder = os.path.join(work, name)
    os.makedirs(folder, exist_ok=True)
    config_path = os.path.join(folder, "config.json")
    model.config.architectures = [model_class]  # as save_pretrained writes it
    model.config.to_json_file(config_path)
    out = os.path.join(folder, f"{name}.onnx")
    gen = run([planner, "generate", "hf", config_path, out, "--seq", str(SEQ),
               "--batch", str(BATCH)])
    if gen.returncode != 0:
        return f"{name}: generate failed: {gen.stderr.strip()}"
    count = int(re.search(r"decoder, ([\d,]+) parameters", gen.stdout).group(1).replace(",", ""))
    # The same weights in the generated graph's external data file.
    graph = onnx.load(out, load_external_data=False)
    data_file = None
    blob = bytearray()
    for init in graph.graph.initializer:
        ext = {e.key: e.value for e in init.external_data}
        if not ext:
            continue
        data_file = ext["location"]
        value = hf_tensor(init.name, params)
        if list(value.shape) != list(init.dims):
            return f"{name}: {init.name} is {list(init.dims)}, transformers' {list(value.shape)}"
        offset = int(ext["offset"])
        blob.extend(b"\0" * (offset + int(ext["length"]) - len(blob)))
        blob[offset:offset + int(ext["length"])] = value.tobytes()
    with open(os.path.join(folder, data_file), "wb") as f:
        f.write(blob)
    # The token ids and transformers' logits, as ONNX test data.
    rng = np.random.default_rng(1)
    ids = rng.integers(0, config.vocab_size, size=(BATCH, SEQ), dtype=np.int64)
    with torch.no_grad():
        logits = model(torch.from_numpy(ids)).logits.numpy().astype(np.float32)
    data = os.path.join(folder, "data")
    os.makedirs(data, exist_ok=True)
    onnx.save_tensor(numpy_helper.from_array(ids, "input_ids"), os.path.join(data, "input_0.pb"))
    onnx.save_tensor(numpy_helper.from_array(logits, "logits"), os.path.join(data, "output_0.pb"))
    verify = run([planner, "verify", out, "--mode", "infer", "--weights", "--inputs", data,
                  "--gpus", "2", "--search", "dp",
                  "--expected-atol", "1e-4", "--expected-rtol", "1e-3"])
    problems = []
    if count != expected_count:
        problems.append(f"parameters {count:,} here, {expected_count:,} in transformers")
    if verify.returncode != 0:
        problems.append("verify: " + (verify.stdout + verify.stderr).strip().splitlines()[-1])
    against = [l for l in verify.stdout.splitlines() if l.startswith("against")]
    status = "FAIL" if problems else "ok"
    print(f"{status:4} {name}: {config.architectures[0] if config.architectures else model_class}"
          f", {count:,} parameters; " + ("; ".join(problems) if problems else
                                         (against[0] if against else "verified")))
    if not problems:
        shutil.rmtree(folder, ignore_errors=True)
    return "; ".join(problems)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    planner, work = sys.argv[1:3]
    os.makedirs(work, exist_ok=True)
    failures = 0
    for name in CASES:
        problem = check(planner, work, name)
        if problem:
            failures += 1
            if not problem.startswith(name):
                continue  # printed with the case's line
            print(f"FAIL {problem}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
