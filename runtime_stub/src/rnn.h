// The recurrent operators' calls as both backends read them: inputs, attributes and outputs
// checked against ONNX's LSTM, GRU and RNN and the gradient operators, gathered into an RnnCall
// for rnn_program.h. Tensors are used in place (host or device memory alike); only a host
// backend reads sequence_lens' values to check them.
#pragma once

#include "kernel_util.h"
#include "rnn_program.h"

namespace planner::rt::kernels {

/// Which operator a call is.
enum class RnnOp {
  kForward,       ///< LSTM, GRU, RNN
  kFusedGrad,     ///< GRUGrad, RNNGrad
  kLstmGradData,  ///< LSTMGradData
};

/// The call of `ctx` (op `op` of cell `cell`), workspace not set. With `host_lens`, the
/// sequence lengths' values are read and checked (they are host memory).
RnnCall parse_rnn_call(const KernelContext& ctx, RnnCell cell, RnnOp op, bool host_lens);
/// Whether the call runs its backward pass.
inline bool rnn_backward(RnnOp op) {
  return op != RnnOp::kForward;
}

/// LSTMGradWeights: inputs X [T, B, I], H [T, D, B, H], initial_h (optional), dGates
/// [T, D, B, 4H]; outputs dW, dR, dB (each optional).
struct LstmWeightsCall {
  RnnDims r;
  const float *X = nullptr, *Hs = nullptr, *h0 = nullptr, *dG = nullptr;
  float *dw = nullptr, *dr = nullptr, *db = nullptr;
};
LstmWeightsCall parse_lstm_grad_weights(const KernelContext& ctx);

}  // namespace planner::rt::kernels
