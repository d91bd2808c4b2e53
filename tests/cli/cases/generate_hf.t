# generate hf: the presets (published configurations and their parameter counts), a decoder
# from a config.json (grouped-query attention, tied embeddings, attention biases, its own head
# width) and a Qwen3 one (query/key norms; named by model_type) that plan and verify on 4 ranks,
# and what it refuses: an architecture it does not know (naming the ones it does), a size flag
# beside a config, a missing field, a file that is not JSON, the config as the output.
$PLANNER generate hf --list
cat > $TMP/config.json <<'CONFIG'
{"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 96,
 "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 24,
 "vocab_size": 128, "max_position_embeddings": 64, "tie_word_embeddings": true,
 "attention_bias": true, "rope_theta": 500000.0, "hidden_act": "silu"}
CONFIG
$PLANNER generate hf $TMP/config.json $TMP/tiny.onnx --seq 16
$PLANNER verify $TMP/tiny.onnx --gpus 4 --batch 4 --search dp | grep -E "^(ok|error)"
echo '{"model_type": "qwen3", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 128, "max_position_embeddings": 64, "tie_word_embeddings": true}' > $TMP/qwen3.json
$PLANNER generate hf $TMP/qwen3.json $TMP/q3.onnx --seq 16
$PLANNER verify $TMP/q3.onnx --gpus 4 --batch 4 --search megatron | grep -E "^(ok|error)"
$PLANNER generate hf --preset llama3.2-1b $TMP/l32.onnx
$PLANNER generate hf --preset llama4 $TMP/x.onnx
echo '{"architectures": ["DeepseekV3ForCausalLM"]}' > $TMP/ds.json
$PLANNER generate hf $TMP/ds.json $TMP/ds.onnx
$PLANNER generate hf $TMP/config.json $TMP/y.onnx --layers 4
echo '{"architectures": ["LlamaForCausalLM"], "hidden_size": 64}' > $TMP/short.json
$PLANNER generate hf $TMP/short.json $TMP/s.onnx
echo 'not json' > $TMP/bad.json
$PLANNER generate hf $TMP/bad.json $TMP/b.onnx
$PLANNER generate hf $TMP/config.json $TMP/config.json
$PLANNER generate hf $TMP/config.json
