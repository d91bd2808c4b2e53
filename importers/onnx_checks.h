// Checks on ONNX input before third-party code sees it: ONNX 1.12's text parser recurses
// without bound, and its shape inference divides by strides, indexes by attribute lengths and
// trusts ranks it never checked (SIGFPE, SIGSEGV on hostile or merely wrong models).
//
// API: `check_model_text` scans ONNX textual syntax before OnnxParser parses it (NUL bytes,
// nesting depth); `guard_shape_inference` wraps the inference functions of the operators whose
// ONNX rules crash on bad attributes with checks that fail as ordinary inference errors
// (naming the node) before the original rule runs.
#pragma once

#include <string>
#include <string_view>

#include "support/expected.h"

namespace planner::importers {

/// The deepest bracket nesting ({ ( [ <) accepted in ONNX textual syntax; real models stay
/// under 10 (graph, node attributes, lists).
inline constexpr int kMaxTextNesting = 64;

/// Refuses model text that ONNX's parser would mishandle: a NUL byte (the parser would stop
/// there, silently dropping the rest of the file) and nesting deeper than kMaxTextNesting
/// (its recursion would overflow the stack). Errors are one line, `source:line:col: ...`.
Expected<void> check_model_text(std::string_view text, const std::string& source);

/// Installs, once per process (thread-safe), checked wrappers around ONNX's shape inference of
/// Conv, ConvTranspose, ConvInteger, QLinearConv, MaxPool, AveragePool, LpPool, MaxUnpool,
/// MaxRoiPool and GatherND: zero or negative strides, dilations and kernel sizes, pads of the
/// wrong length or negative, a weight (or indices) whose rank disagrees with the input, groups
/// that do not divide the channels, sizes whose sums overflow int64, batch_dims out of range. A
/// failed check is an onnx::InferenceError, reported like any other inference failure of that node.
void guard_shape_inference();

}  // namespace planner::importers
