// LSTM on onednn against the cpu device: every direction, with and without bias and initial
// states, each subset of the outputs, and the forms it refuses; batches of up to 4 on the
// device's own kernel (lstm_cells.hpp, where AVX-512 runs), larger ones on oneDNN's
// lstm_forward.
#include <gtest/gtest.h>

#include "onednn_test_util.hpp"

namespace loom::onednn_testing {
namespace {

constexpr int64_t kT = 5, kN = 2, kI = 3, kH = 4;

struct LstmCase {
  std::string direction = "forward";
  bool bias = true, states = true;
  std::vector<std::string> outputs = {"y", "y_h", "y_c"};  // "" leaves one out
  int64_t t = kT, n = kN, i = kI, h = kH;
};

int64_t directions(const LstmCase& c) {
  return c.direction == "bidirectional" ? 2 : 1;
}

ModelBuilder lstm_model(const LstmCase& c) {
  const int64_t d = directions(c);
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {c.t, c.n, c.i});
  if (c.states) {
    m.input("h0", LOOM_DTYPE_FLOAT32, {d, c.n, c.h});
    m.input("c0", LOOM_DTYPE_FLOAT32, {d, c.n, c.h});
  }
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {d, 4 * c.h, c.i}, 11, -0.6, 0.6));
  m.initializer("r", random_tensor(LOOM_DTYPE_FLOAT32, {d, 4 * c.h, c.h}, 12, -0.6, 0.6));
  if (c.bias) m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {d, 8 * c.h}, 13, -0.5, 0.5));
  m.node("LSTM", {"x", "w", "r", c.bias ? "b" : "", "", c.states ? "h0" : "", c.states ? "c0" : ""},
         c.outputs, "lstm")
      .s("direction", c.direction)
      .i("hidden_size", c.h);
  for (const std::string& out : c.outputs)
    if (!out.empty()) m.output(out);
  return m;
}

std::vector<std::pair<std::string, Tensor>> lstm_inputs(const LstmCase& c) {
  const int64_t d = directions(c);
  std::vector<std::pair<std::string, Tensor>> in{
      {"x", random_tensor(LOOM_DTYPE_FLOAT32, {c.t, c.n, c.i}, 1, -2, 2)}};
  if (c.states) {
    in.emplace_back("h0", random_tensor(LOOM_DTYPE_FLOAT32, {d, c.n, c.h}, 2));
    in.emplace_back("c0", random_tensor(LOOM_DTYPE_FLOAT32, {d, c.n, c.h}, 3));
  }
  return in;
}

// Whether the LSTM ran on the device's own kernel (its verbose step label says so).
bool ran_own_kernel(const LstmCase& c) {
  bool own = false;
  for (const std::string& step :
       run_model_capturing_log(lstm_model(c), lstm_inputs(c), onednn_only("verbose=1"), "onednn"))
    own |= step.rfind("LSTM ", 0) == 0 && step.find("[loom lstm]") != std::string::npos;
  return own;
}

TEST(OnednnLstm, EveryDirectionMatchesCpu) {
  for (int64_t batch : {kN, int64_t{6}})
    for (const char* direction : {"forward", "reverse", "bidirectional"})
      for (bool bias : {true, false})
        for (bool states : {true, false}) {
          SCOPED_TRACE(std::string(direction) + (bias ? " bias" : "") + (states ? " states" : "") +
                       " batch " + std::to_string(batch));
          LstmCase c{direction, bias, states};
          c.n = batch;
          expect_matches_cpu(lstm_model(c), lstm_inputs(c), onednn_only());
        }
}

// The own kernel's vector loop at widths with and without a partial last vector, and a text
// recognizer's layer (50 steps, 256 inputs, hidden 128); batches above 4 go to oneDNN.
TEST(OnednnLstm, SmallBatchesRunTheOwnKernel) {
  std::vector<LstmCase> cases;
  for (int64_t hidden : {16, 20, 33})
    cases.push_back({"bidirectional", true, true, {"y", "y_h", "y_c"}, 9, 3, 7, hidden});
  cases.push_back({"bidirectional", true, false, {"y"}, 50, 1, 256, 128});
  cases.push_back({"reverse", true, true, {"y", "y_h", "y_c"}, 4, 5, 3, 8});
  for (const LstmCase& c : cases) {
    SCOPED_TRACE(c.direction + " T " + std::to_string(c.t) + " N " + std::to_string(c.n) + " I " +
                 std::to_string(c.i) + " H " + std::to_string(c.h));
    expect_matches_cpu(lstm_model(c), lstm_inputs(c), onednn_only());
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f")) {
      EXPECT_EQ(ran_own_kernel(c), c.n <= 4);
    }
#endif
  }
}

TEST(OnednnLstm, SubsetsOfTheOutputs) {
  for (const char* direction : {"forward", "bidirectional"})
    for (const std::vector<std::string>& outputs :
         {std::vector<std::string>{"y"}, std::vector<std::string>{"", "y_h"},
          std::vector<std::string>{"", "", "y_c"}, std::vector<std::string>{"y", "", "y_c"}}) {
      SCOPED_TRACE(std::string(direction) + " outputs " + std::to_string(outputs.size()));
      LstmCase c{direction, true, true, outputs};
      expect_matches_cpu(lstm_model(c), lstm_inputs(c), onednn_only());
    }
}

// Only one of the initial states given: the other starts at zero.
TEST(OnednnLstm, OneInitialStateGiven) {
  for (const char* given : {"h0", "c0"}) {
    SCOPED_TRACE(given);
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {kT, kN, kI});
    m.input(given, LOOM_DTYPE_FLOAT32, {1, kN, kH});
    m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {1, 4 * kH, kI}, 11, -0.6, 0.6));
    m.initializer("r", random_tensor(LOOM_DTYPE_FLOAT32, {1, 4 * kH, kH}, 12, -0.6, 0.6));
    bool h = std::string(given) == "h0";
    m.node("LSTM", {"x", "w", "r", "", "", h ? "h0" : "", h ? "" : "c0"}, {"y", "y_h", "y_c"})
        .i("hidden_size", kH);
    for (const char* out : {"y", "y_h", "y_c"}) m.output(out);
    expect_matches_cpu(m,
                       {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {kT, kN, kI}, 1, -2, 2)},
                        {given, random_tensor(LOOM_DTYPE_FLOAT32, {1, kN, kH}, 2)}},
                       onednn_only());
  }
}

TEST(OnednnLstm, FormsOneDnnHasNoPrimitiveForStayOnCpu) {
  struct Refusal {
    const char* reason;
    std::function<void(NodeRef&)> set;
  };
  for (const Refusal& refusal : std::vector<Refusal>{
           {"LSTM with clip", [](NodeRef& n) { n.f("clip", 3.f); }},
           {"LSTM with input_forget", [](NodeRef& n) { n.i("input_forget", 1); }},
           {"LSTM with layout 1", [](NodeRef& n) { n.i("layout", 1); }},
       }) {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {kT, kN, kI});
    m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {1, 4 * kH, kI}, 11));
    m.initializer("r", random_tensor(LOOM_DTYPE_FLOAT32, {1, 4 * kH, kH}, 12));
    NodeRef n = m.node("LSTM", {"x", "w", "r"}, {"y"}, "lstm");
    n.i("hidden_size", kH);
    refusal.set(n);
    m.output("y");
    expect_refused(m, {kT, kN, kI}, refusal.reason);
  }
}

}  // namespace
}  // namespace loom::onednn_testing
