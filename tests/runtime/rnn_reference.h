// The reference recurrent kernels (rnn_reference.cpp): the same calls as the runtime's LSTM,
// GRU, RNN, LSTMGradData, LSTMGradWeights, GRUGrad and RNNGrad.
#pragma once

#include "../../runtime_stub/src/kernel_util.h"

namespace rnn_reference {

using planner::rt::kernels::KernelContext;

void lstm(const KernelContext& ctx);
void gru(const KernelContext& ctx);
void rnn(const KernelContext& ctx);
void lstm_grad_data(const KernelContext& ctx);
void lstm_grad_weights(const KernelContext& ctx);
void gru_grad(const KernelContext& ctx);
void rnn_grad(const KernelContext& ctx);

}  // namespace rnn_reference
