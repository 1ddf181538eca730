// The decoder-layer ops on the onednn device (ops_attention.cpp, ops_rotary.cpp, ops_norm.cpp's
// RMSNormalization), each against the cpu reference device: Attention with grouped heads,
// caches, masks, causal and window bounds, softcap; RotaryEmbedding with and without
// position_ids; RMSNormalization's axes and scales; and what the device leaves to cpu.
#include <gtest/gtest.h>

#include <string>

#include "onednn_test_util.hpp"

// The cases below name only the fields they change (designated initializers); GCC 12 warns
// about the rest, which keep their defaults by design.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace loom::onednn_testing {
namespace {

using Inputs = std::vector<std::pair<std::string, Tensor>>;

struct AttentionCase {
  std::string name;
  bool three_d = false;
  int64_t batch = 1, q_heads = 4, kv_heads = 2, q_len = 5, kv_len = 5, past = 0, head = 8,
          v_head = 8;
  bool causal = false;
  std::vector<int64_t> mask;  // attn_mask dims, empty for none
  bool bool_mask = false;
  float softcap = 0, scale = 0;
  int64_t opset = 23, left = -1, right = -1;
  bool present = true;
};

// The model of one Attention node and random inputs for it.
std::pair<ModelBuilder, Inputs> attention_model(const AttentionCase& c) {
  ModelBuilder m(c.opset);
  Inputs in;
  auto add = [&](const std::string& name, std::vector<int64_t> dims, uint32_t seed,
                 loom_dtype_t dtype = LOOM_DTYPE_FLOAT32) {
    m.input(name, dtype, dims);
    in.emplace_back(name, random_tensor(dtype, dims, seed, -2.0, 2.0));
  };
  if (c.three_d) {
    add("q", {c.batch, c.q_len, c.q_heads * c.head}, 1);
    add("k", {c.batch, c.kv_len, c.kv_heads * c.head}, 2);
    add("v", {c.batch, c.kv_len, c.kv_heads * c.v_head}, 3);
  } else {
    add("q", {c.batch, c.q_heads, c.q_len, c.head}, 1);
    add("k", {c.batch, c.kv_heads, c.kv_len, c.head}, 2);
    add("v", {c.batch, c.kv_heads, c.kv_len, c.v_head}, 3);
  }
  std::vector<std::string> inputs{"q", "k", "v", ""};
  if (!c.mask.empty()) {
    add("mask", c.mask, 4, c.bool_mask ? LOOM_DTYPE_BOOL : LOOM_DTYPE_FLOAT32);
    inputs[3] = "mask";
  }
  if (c.past >= 0 && c.present) {
    add("past_k", {c.batch, c.kv_heads, c.past, c.head}, 5);
    add("past_v", {c.batch, c.kv_heads, c.past, c.v_head}, 6);
    inputs.push_back("past_k");
    inputs.push_back("past_v");
  }
  std::vector<std::string> outputs{"y"};
  if (c.present) outputs = {"y", "present_k", "present_v"};
  NodeRef node = m.node("Attention", inputs, outputs);
  if (c.three_d) node.i("q_num_heads", c.q_heads).i("kv_num_heads", c.kv_heads);
  if (c.causal) node.i("is_causal", 1);
  if (c.softcap > 0) node.f("softcap", c.softcap);
  if (c.scale > 0) node.f("scale", c.scale);
  if (c.left >= 0) node.i("left_window_size", c.left);
  if (c.right >= 0) node.i("right_window_size", c.right);
  for (const std::string& o : outputs) m.output(o);
  return {m, in};
}

TEST(OnednnAttention, MatchesCpu) {
  std::vector<AttentionCase> cases;
  cases.push_back({.name = "4-D, grouped heads"});
  cases.push_back({.name = "4-D causal, past", .q_len = 3, .kv_len = 3, .past = 6, .causal = true});
  cases.push_back({.name = "3-D causal, empty past (prompt)",
                   .three_d = true,
                   .q_heads = 6,
                   .kv_heads = 2,
                   .q_len = 7,
                   .kv_len = 7,
                   .past = 0,
                   .causal = true});
  cases.push_back({.name = "3-D decode step",
                   .three_d = true,
                   .batch = 2,
                   .q_heads = 6,
                   .kv_heads = 3,
                   .q_len = 1,
                   .kv_len = 1,
                   .past = 9,
                   .causal = true});
  cases.push_back({.name = "causal, more queries than keys (top-left)",
                   .q_len = 6,
                   .kv_len = 4,
                   .causal = true,
                   .present = false});
  cases.push_back(
      {.name = "float mask [Sq, T]", .q_len = 4, .kv_len = 4, .past = 2, .mask = {4, 6}});
  cases.push_back({.name = "bool mask [B, 1, Sq, T], causal",
                   .batch = 2,
                   .q_len = 4,
                   .kv_len = 4,
                   .past = 1,
                   .causal = true,
                   .mask = {2, 1, 4, 5},
                   .bool_mask = true});
  cases.push_back({.name = "short mask (keys past it masked)",
                   .q_len = 3,
                   .kv_len = 6,
                   .mask = {1, 4, 3, 4},
                   .present = false});
  cases.push_back(
      {.name = "softcap and scale", .q_heads = 2, .kv_heads = 2, .softcap = 2.5f, .scale = 0.3f});
  cases.push_back({.name = "value head size differs",
                   .three_d = true,
                   .q_heads = 4,
                   .kv_heads = 1,
                   .head = 8,
                   .v_head = 12,
                   .present = false});
  cases.push_back({.name = "many row blocks, multi-query",
                   .three_d = true,
                   .q_heads = 2,
                   .kv_heads = 1,
                   .q_len = 150,
                   .kv_len = 150,
                   .head = 16,
                   .v_head = 16,
                   .causal = true,
                   .present = false});
  cases.push_back({.name = "opset 25 window",
                   .q_len = 9,
                   .kv_len = 9,
                   .past = 3,
                   .opset = 25,
                   .left = 2,
                   .right = 1});
  cases.push_back({.name = "opset 25 window, causal",
                   .q_len = 9,
                   .kv_len = 9,
                   .causal = true,
                   .opset = 25,
                   .left = 3,
                   .present = false});
  for (const AttentionCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto [m, in] = attention_model(c);
    expect_matches_cpu(m, in, onednn_only());
  }
}

// A query row whose every key the mask removes has output 0 (the ONNX rule), not NaN.
TEST(OnednnAttention, FullyMaskedRowIsZero) {
  AttentionCase c{.name = "masked",
                  .q_heads = 2,
                  .kv_heads = 1,
                  .q_len = 3,
                  .kv_len = 4,
                  .mask = {3, 4},
                  .bool_mask = true,
                  .present = false};
  auto [m, in] = attention_model(c);
  Tensor& mask = in[3].second;
  for (int64_t j = 0; j < 4; ++j) mask.data<uint8_t>()[4 + j] = 0;  // row 1: nothing visible
  std::vector<Tensor> y = expect_matches_cpu(m, in, onednn_only());
  ASSERT_EQ(y.size(), 1u);
  const float* data = y[0].data<float>();
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t d = 0; d < 8; ++d) EXPECT_EQ(data[(h * 3 + 1) * 8 + d], 0.f);
}

// What the device leaves to cpu: it fails alone with the reason, and runs with the fallback.
TEST(OnednnAttention, RefusedVariantsRunOnCpu) {
  struct Variant {
    const char* reason;
    bool qk_output;
    int64_t softmax_precision;
  };
  for (const Variant& v : {Variant{"qk_matmul_output requested", true, 0},
                           Variant{"softmax_precision other than float", false, 11}}) {
    SCOPED_TRACE(v.reason);
    ModelBuilder m(23);
    m.input("x", LOOM_DTYPE_FLOAT32, {1, 2, 3, 4});
    std::vector<std::string> outputs{"y"};
    if (v.qk_output) outputs = {"y", "", "", "qk"};
    NodeRef node = m.node("Attention", {"x", "x", "x"}, outputs);
    if (v.softmax_precision) node.i("softmax_precision", v.softmax_precision);
    m.output("y");
    if (v.qk_output) m.output("qk");
    expect_refused(m, {1, 2, 3, 4}, v.reason);
  }
}

TEST(OnednnRmsNorm, AxesAndScales) {
  struct Case {
    std::vector<int64_t> x;
    int64_t axis;
    std::vector<int64_t> scale;
  };
  for (const Case& c : {Case{{2, 5, 24}, -1, {24}}, Case{{2, 5, 24}, 1, {5, 24}},
                        Case{{3, 40}, -1, {1}}, Case{{2, 3, 16}, -1, {1, 1, 16}},
                        Case{{1, 1, 896}, -1, {896}}, Case{{64, 600}, -1, {600}}}) {
    SCOPED_TRACE("x rank " + std::to_string(c.x.size()) + " axis " + std::to_string(c.axis));
    ModelBuilder m(23);
    m.input("x", LOOM_DTYPE_FLOAT32, c.x);
    m.initializer("g", random_tensor(LOOM_DTYPE_FLOAT32, c.scale, 2, 0.5, 1.5));
    m.node("RMSNormalization", {"x", "g"}, {"y"}).i("axis", c.axis).f("epsilon", 1e-6f);
    m.output("y");
    check_unary_model(m, c.x);
  }
}

TEST(OnednnRmsNorm, RefusesOtherStashTypesAndScaleBroadcasts) {
  {
    ModelBuilder m(23);
    m.input("x", LOOM_DTYPE_FLOAT32, {2, 8});
    m.initializer("g", random_tensor(LOOM_DTYPE_FLOAT32, {8}, 2));
    m.node("RMSNormalization", {"x", "g"}, {"y"}).i("stash_type", 11);
    m.output("y");
    expect_refused(m, {2, 8}, "stash_type other than float");
  }
  {
    ModelBuilder m(23);
    m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 8});
    m.initializer("g", random_tensor(LOOM_DTYPE_FLOAT32, {3, 1}, 2));
    m.node("RMSNormalization", {"x", "g"}, {"y"}).i("axis", 1);
    m.output("y");
    expect_refused(m, {2, 3, 8}, "scale broadcast within the normalized axes");
  }
}

struct RotaryCase {
  std::string name;
  bool three_d = true;
  bool ids = true;
  bool constant_ids = false;
  bool interleaved = false;
  int64_t rotary_dim = 0;
};

std::pair<ModelBuilder, Inputs> rotary_model(const RotaryCase& c) {
  const int64_t batch = 2, seq = 5, heads = 3, head = 8, positions = 16;
  const int64_t half = (c.rotary_dim ? c.rotary_dim : head) / 2;
  ModelBuilder m(23);
  Inputs in;
  const std::vector<int64_t> x_dims = c.three_d ? std::vector<int64_t>{batch, seq, heads * head}
                                                : std::vector<int64_t>{batch, heads, seq, head};
  m.input("x", LOOM_DTYPE_FLOAT32, x_dims);
  in.emplace_back("x", random_tensor(LOOM_DTYPE_FLOAT32, x_dims, 1));
  const std::vector<int64_t> cache =
      c.ids ? std::vector<int64_t>{positions, half} : std::vector<int64_t>{batch, seq, half};
  m.initializer("cos", random_tensor(LOOM_DTYPE_FLOAT32, cache, 2));
  m.initializer("sin", random_tensor(LOOM_DTYPE_FLOAT32, cache, 3));
  std::vector<std::string> inputs{"x", "cos", "sin"};
  if (c.ids) {
    std::vector<int64_t> ids;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t s = 0; s < seq; ++s) ids.push_back((b * 7 + s * 3) % positions);
    if (c.constant_ids) {
      m.initializer("ids", int64_tensor({batch, seq}, ids));
    } else {
      m.input("ids", LOOM_DTYPE_INT64, {batch, seq});
      in.emplace_back("ids", int64_tensor({batch, seq}, ids));
    }
    inputs.push_back("ids");
  }
  NodeRef node = m.node("RotaryEmbedding", inputs, {"y"});
  if (c.three_d) node.i("num_heads", heads);
  if (c.interleaved) node.i("interleaved", 1);
  if (c.rotary_dim) node.i("rotary_embedding_dim", c.rotary_dim);
  m.output("y");
  return {m, in};
}

TEST(OnednnRotary, MatchesCpu) {
  for (const RotaryCase& c :
       {RotaryCase{.name = "3-D, position_ids"},
        RotaryCase{.name = "4-D, caches per token", .three_d = false, .ids = false},
        RotaryCase{.name = "interleaved", .interleaved = true},
        RotaryCase{.name = "partial rotation", .rotary_dim = 4},
        RotaryCase{.name = "interleaved partial, 4-D",
        .three_d = false,
        .interleaved = true,
        .rotary_dim = 6},
        RotaryCase{.name = "constant position_ids", .constant_ids = true}}) {
    SCOPED_TRACE(c.name);
    auto [m, in] = rotary_model(c);
    expect_matches_cpu(m, in, onednn_only());
  }
}

// A position past the caches is an input error with the id and the bound, not a read outside
// them.
TEST(OnednnRotary, PositionOutsideTheCachesFails) {
  auto [m, in] = rotary_model({.name = "bad id"});
  in[1].second.data<int64_t>()[3] = 16;
  std::filesystem::path path = m.save();
  try {
    run_model(path, in, onednn_only());
    ADD_FAILURE() << "ran with position id 16 of 16";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("position id 16 is outside the caches' 16 positions"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

// A whole decoder layer as exported (symbolic sequence and past lengths; tests/bench/
// decoder_block.py's graph at toy widths) runs on onednn alone and matches cpu, for the prompt
// (an empty past) and for a decode step (a one-token query against the cache).
TEST(OnednnDecoderLayer, PromptAndDecodeStepMatchCpu) {
  constexpr int64_t hidden = 32, heads = 4, kv_heads = 2, head = 8, inter = 48, positions = 64;
  ModelBuilder m(23);
  m.input("x", LOOM_DTYPE_FLOAT32, {1, -1, hidden});
  m.input("ids", LOOM_DTYPE_INT64, {1, -1});
  m.input("past_k", LOOM_DTYPE_FLOAT32, {1, kv_heads, -1, head});
  m.input("past_v", LOOM_DTYPE_FLOAT32, {1, kv_heads, -1, head});
  m.initializer("cos", random_tensor(LOOM_DTYPE_FLOAT32, {positions, head / 2}, 1));
  m.initializer("sin", random_tensor(LOOM_DTYPE_FLOAT32, {positions, head / 2}, 2));
  m.initializer("g1", random_tensor(LOOM_DTYPE_FLOAT32, {hidden}, 3, 0.5, 1.5));
  m.initializer("g2", random_tensor(LOOM_DTYPE_FLOAT32, {hidden}, 4, 0.5, 1.5));
  uint32_t seed = 10;
  auto weight = [&](const std::string& name, int64_t rows, int64_t cols) {
    m.initializer(name, random_tensor(LOOM_DTYPE_FLOAT32, {rows, cols}, seed++, -0.3, 0.3));
  };
  weight("wq", hidden, heads * head);
  weight("wk", hidden, kv_heads * head);
  weight("wv", hidden, kv_heads * head);
  weight("wo", heads * head, hidden);
  weight("wg", hidden, inter);
  weight("wu", hidden, inter);
  weight("wd", inter, hidden);
  m.node("RMSNormalization", {"x", "g1"}, {"n1"}).f("epsilon", 1e-6f);
  m.node("MatMul", {"n1", "wq"}, {"q"});
  m.node("MatMul", {"n1", "wk"}, {"k"});
  m.node("MatMul", {"n1", "wv"}, {"v"});
  m.node("RotaryEmbedding", {"q", "cos", "sin", "ids"}, {"qr"}).i("num_heads", heads);
  m.node("RotaryEmbedding", {"k", "cos", "sin", "ids"}, {"kr"}).i("num_heads", kv_heads);
  m.node("Attention", {"qr", "kr", "v", "", "past_k", "past_v"}, {"a", "present_k", "present_v"})
      .i("is_causal", 1)
      .i("q_num_heads", heads)
      .i("kv_num_heads", kv_heads);
  m.node("MatMul", {"a", "wo"}, {"o"});
  m.node("Add", {"x", "o"}, {"h"});
  m.node("RMSNormalization", {"h", "g2"}, {"n2"}).f("epsilon", 1e-6f);
  m.node("MatMul", {"n2", "wg"}, {"gate"});
  m.node("MatMul", {"n2", "wu"}, {"up"});
  m.node("Sigmoid", {"gate"}, {"gs"});
  m.node("Mul", {"gate", "gs"}, {"silu"});
  m.node("Mul", {"silu", "up"}, {"glu"});
  m.node("MatMul", {"glu", "wd"}, {"down"});
  m.node("Add", {"h", "down"}, {"y"});
  m.output("y");
  m.output("present_k");
  m.output("present_v");
  auto inputs = [&](int64_t seq, int64_t past) {
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < seq; ++i) ids.push_back(past + i);
    return Inputs{{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, seq, hidden}, 20)},
                  {"ids", int64_tensor({1, seq}, ids)},
                  {"past_k", random_tensor(LOOM_DTYPE_FLOAT32, {1, kv_heads, past, head}, 21)},
                  {"past_v", random_tensor(LOOM_DTYPE_FLOAT32, {1, kv_heads, past, head}, 22)}};
  };
  {
    SCOPED_TRACE("prompt of 7 tokens");
    expect_matches_cpu(m, inputs(7, 0), onednn_only());
  }
  {
    SCOPED_TRACE("decode step against 7 cached tokens");
    expect_matches_cpu(m, inputs(1, 7), onednn_only());
  }
}

}  // namespace
}  // namespace loom::onednn_testing
