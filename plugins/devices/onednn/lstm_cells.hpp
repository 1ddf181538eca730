// LSTM of a small batch on the device's own kernels (ops_rnn.cpp picks it; oneDNN's
// lstm_forward stays for larger batches and CPUs without AVX-512).
//
// oneDNN 2.6's lstm_forward takes 0.69 ms for a text recognizer's bidirectional layer (batch 1,
// 50 steps, 256 inputs, hidden 128) at 2 threads, against 0.50 ms in ONNX Runtime: with one
// sequence, each step's recurrent product is a [1, 128] x [128, 512] matrix-vector product too
// small to split over threads, and the primitive splits it and runs the two directions one
// after the other. Here a matmul primitive (ops_rnn.cpp) computes the input products of every
// step and direction at once, over all threads; then each direction runs its recurrence on a
// thread of its own: per step the matvec kernel (matvec.hpp) over the packed recurrent weights,
// added to that step's input products, then the gates in one vector pass (0.37 ms).
#pragma once

#include <cstdint>
#include <vector>

namespace loom::onednn {

// Whether run_small_lstm runs here (x86-64 with AVX-512F).
bool small_lstm_available();

struct SmallLstm {
  int64_t steps = 0, batch = 0, hidden = 0, directions = 1;
  bool reverse = false;               // a single direction running from the last step to the first
  std::vector<std::vector<float>> r;  // per direction, R packed by pack_matvec_weights
};

// Packs ONNX's R ([D, 4H, H], gates i, o, f, c) for run_small_lstm.
SmallLstm make_small_lstm(int64_t steps, int64_t batch, int64_t hidden, int64_t directions,
                          bool reverse, const std::vector<float>& r);

// `pre` [T, N, D, 4H]: x W^T + Wb + Rb of every step and direction, in ONNX's gate order; h0, c0
// [D, N, H] or null (zeros); y [T, D, N, H], y_h and y_c [D, N, H], each may be null. ONNX's
// default activations (Sigmoid, Tanh, Tanh), no clip or peepholes.
void run_small_lstm(const SmallLstm& lstm, const float* pre, const float* h0, const float* c0,
                    float* y, float* y_h, float* y_c);

}  // namespace loom::onednn
