// Building ONNX models node by node, for the graph-only generators (gpt_model.h,
// llama_model.h): initializers as external-data references into one file that is never
// written, Constant nodes for shapes and scalars, attributes on the node just added.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

#include "importers/gpt_model.h"

namespace planner::importers::detail {

// Builds the graph node by node; initializers are appended to one external-data file in order.
class Builder {
 public:
  Builder(onnx::GraphProto& graph, std::string data_file)
      : g_(graph), data_file_(std::move(data_file)) {}

  // A float parameter of `dims`, stored at the next offset of the data file.
  std::string param(const std::string& name, std::vector<int64_t> dims) {
    onnx::TensorProto* t = g_.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t bytes = 4;
    for (int64_t d : dims) t->add_dims(d), bytes *= d;
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto entry = [&](const char* key, const std::string& value) {
      onnx::StringStringEntryProto* e = t->add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    entry("location", data_file_);
    entry("offset", std::to_string(offset_));
    entry("length", std::to_string(bytes));
    offset_ += bytes;
    return name;
  }

  // A Constant node holding int64 values (shapes, axes, split sizes).
  std::string ints(const std::string& name, const std::vector<int64_t>& values, bool scalar) {
    onnx::TensorProto value;
    value.set_data_type(onnx::TensorProto::INT64);
    if (!scalar) value.add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) value.add_int64_data(v);
    return constant(name, value);
  }

  // A Constant node holding one float (scalar) or a bool.
  std::string scalar(const std::string& name, float v) {
    onnx::TensorProto value;
    value.set_data_type(onnx::TensorProto::FLOAT);
    value.add_float_data(v);
    return constant(name, value);
  }
  std::string boolean(const std::string& name, bool v) {
    onnx::TensorProto value;
    value.set_data_type(onnx::TensorProto::BOOL);
    value.add_int32_data(v ? 1 : 0);
    return constant(name, value);
  }

  // A node with one output named after the node.
  std::string node(const std::string& type, const std::string& name,
                   const std::vector<std::string>& inputs) {
    return nodes(type, name, inputs, {name})[0];
  }
  std::vector<std::string> nodes(const std::string& type, const std::string& name,
                                 const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs) {
    last_ = g_.add_node();
    last_->set_op_type(type);
    last_->set_name(name);
    for (const auto& i : inputs) last_->add_input(i);
    for (const auto& o : outputs) last_->add_output(o);
    return outputs;
  }
  // Attributes of the node just added.
  void attr(const std::string& key, int64_t v) {
    onnx::AttributeProto* a = last_->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  void attr(const std::string& key, float v) {
    onnx::AttributeProto* a = last_->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  void attr(const std::string& key, onnx::TensorProto v) {
    onnx::AttributeProto* a = last_->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = std::move(v);
  }
  void attr(const std::string& key, const std::vector<int64_t>& v) {
    onnx::AttributeProto* a = last_->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }

 private:
  std::string constant(const std::string& name, onnx::TensorProto value) {
    node("Constant", name, {});
    onnx::AttributeProto* a = last_->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = std::move(value);
    return name;
  }

  onnx::GraphProto& g_;
  std::string data_file_;
  int64_t offset_ = 0;
  onnx::NodeProto* last_ = nullptr;
};

inline void set_type(onnx::ValueInfoProto* v, const std::string& name, int elem,
                     const std::vector<std::pair<int64_t, std::string>>& dims) {
  v->set_name(name);
  onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  for (const auto& [value, param] : dims) {
    onnx::TensorShapeProto_Dimension* d = t->mutable_shape()->add_dim();
    if (param.empty())
      d->set_dim_value(value);
    else
      d->set_dim_param(param);
  }
}

// A decoder-only language model's ModelProto, opset 17, producer kGeneratorProducer: input
// `input_ids` int64 [batch, seq] and output `logits` float [batch, seq, vocab] (batch 0: a
// dynamic dimension named "batch"). Returns the graph to fill.
inline onnx::GraphProto& start_decoder(onnx::ModelProto& model, const std::string& name,
                                       int64_t batch, int64_t seq, int64_t vocab) {
  model.set_ir_version(8);
  model.set_producer_name(std::string(kGeneratorProducer));
  model.set_producer_version("0.1.0");
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  onnx::GraphProto& g = *model.mutable_graph();
  g.set_name(name);
  const std::pair<int64_t, std::string> b = batch ? std::pair<int64_t, std::string>{batch, ""}
                                                  : std::pair<int64_t, std::string>{0, "batch"};
  set_type(g.add_input(), "input_ids", onnx::TensorProto::INT64, {b, {seq, ""}});
  set_type(g.add_output(), "logits", onnx::TensorProto::FLOAT, {b, {seq, ""}, {vocab, ""}});
  return g;
}

// The loss as torch computes a language model's (torchtitan: F.cross_entropy(pred.flatten(0,
// 1).float(), labels.flatten(0, 1))): the logits widened to f32 (a Cast that the planner's
// mixed precision keeps f32, analysis/precision.h), flattened to rows, and the mean
// SoftmaxCrossEntropyLoss against a new input `labels` int64 [batch, seq]; the graph's output
// becomes the scalar `loss` in place of `logits`.
inline void language_model_loss(Builder& b, onnx::GraphProto& g, const std::string& logits,
                                int64_t batch, int64_t seq, int64_t vocab) {
  const std::pair<int64_t, std::string> bd = batch ? std::pair<int64_t, std::string>{batch, ""}
                                                   : std::pair<int64_t, std::string>{0, "batch"};
  set_type(g.add_input(), "labels", onnx::TensorProto::INT64, {bd, {seq, ""}});
  std::string wide = b.node("Cast", "loss/float", {logits});
  b.attr("to", int64_t{onnx::TensorProto::FLOAT});
  std::string rows =
      b.node("Reshape", "loss/rows", {wide, b.ints("loss/rows_shape", {-1, vocab}, false)});
  std::string labels =
      b.node("Reshape", "loss/labels", {"labels", b.ints("loss/labels_shape", {-1}, false)});
  b.nodes("SoftmaxCrossEntropyLoss", "loss", {rows, labels}, {"loss"});  // reduction: mean
  g.mutable_output()->Clear();
  set_type(g.add_output(), "loss", onnx::TensorProto::FLOAT, {});
}

// The additive causal mask of a context of `seq` positions: -10000 above the diagonal, 0 on
// and below it (ConstantOfShape and Trilu; no constant of seq x seq floats in the file).
inline std::string causal_mask(Builder& b, int64_t seq) {
  b.node("ConstantOfShape", "mask_fill", {b.ints("mask_shape", {seq, seq}, false)});
  onnx::TensorProto fill;
  fill.set_data_type(onnx::TensorProto::FLOAT);
  fill.add_dims(1);
  fill.add_float_data(-10000.0f);
  b.attr("value", std::move(fill));
  std::string mask = b.node("Trilu", "causal_mask", {"mask_fill", b.ints("mask_k", {1}, true)});
  b.attr("upper", int64_t{1});
  return mask;
}

}  // namespace planner::importers::detail
