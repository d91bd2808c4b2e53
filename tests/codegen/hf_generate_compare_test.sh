#!/usr/bin/env bash
# `planner generate hf` against the transformers library (scripts/hf_generate_compare.py): small
# random Llama and Mistral configurations, the parameter count and, on the same weights and
# tokens, the logits (verify --weights --inputs, then partitioned on 2 ranks). Skipped (77),
# saying why, where the virtual environment with transformers cannot be made.
#   hf_generate_compare_test.sh PLANNER SOURCE_DIR VENV_DIR WORK_DIR
set -uo pipefail
planner=$1 src=$2 venv=$3 work=$4
python=$("$src/scripts/python_env.sh" "$venv") || exit 77
rm -rf "$work"
"$python" "$src/scripts/hf_generate_compare.py" "$planner" "$work"
