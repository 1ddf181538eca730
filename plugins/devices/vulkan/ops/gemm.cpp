// Gemm and MatMul on the shared-memory tiled GEMM kernel (shaders/gemm.comp). Transposes and
// broadcast batch dims are strides, never copies. A MatMul followed by an Add of a constant
// row vector (a linear layer's bias) takes the bias in its epilogue, and a following
// activation too.
#include <algorithm>

#include "ops.hpp"

namespace loom::vulkan {
namespace {

struct GemmSpec {
  int64_t m = 1, n = 1, k = 1;
  int64_t a_sm = 0, a_sk = 0, b_sk = 0, b_sn = 0;
  bool has_c = false;
  int64_t c_sm = 0, c_sn = 0;
  float alpha = 1, beta = 1;
  std::vector<int64_t> batch;             // output batch dims (at most 3 after merging)
  std::vector<int64_t> a_batch, b_batch;  // element strides per batch dim
};

void emit(Builder& b, const GemmSpec& g, const Loc& a, const Loc& bl, const Loc* c,
          const Epilogue& e, const Loc& y) {
  std::vector<int64_t> bd = g.batch, sa = g.a_batch, sb = g.b_batch;
  while (bd.size() < 3) {
    bd.insert(bd.begin(), 1);
    sa.insert(sa.begin(), 0);
    sb.insert(sb.begin(), 0);
  }
  int64_t batches = bd[0] * bd[1] * bd[2];
  std::vector<uint32_t> spec = {0,
                                u32(g.m, "M"),
                                u32(g.n, "N"),
                                u32(g.k, "K"),
                                u32(g.a_sm, "stride"),
                                u32(g.a_sk, "stride"),
                                u32(g.b_sk, "stride"),
                                u32(g.b_sn, "stride"),
                                g.has_c ? 1u : 0u,
                                u32(g.c_sm, "stride"),
                                u32(g.c_sn, "stride"),
                                float_bits(g.alpha),
                                float_bits(g.beta),
                                e.op,
                                float_bits(e.alpha),
                                float_bits(e.beta),
                                u32(bd[1], "batch"),
                                u32(bd[2], "batch"),
                                u32(sa[0], "stride"),
                                u32(sa[1], "stride"),
                                u32(sa[2], "stride"),
                                u32(sb[0], "stride"),
                                u32(sb[1], "stride"),
                                u32(sb[2], "stride")};
  if (batches > b.context().limits().maxComputeWorkGroupCount[2])
    sdk::fail(LOOM_ERROR_UNSUPPORTED, "vulkan: too many matrices in one MatMul batch");
  b.dispatch(
      b.context().cpu_like() ? "gemm_regs" : "gemm", spec, {a, bl, c ? *c : a, y},
      {u32((g.n + 63) / 64, "groups"), u32((g.m + 31) / 32, "groups"), u32(batches, "batch")});
}

// ---- Gemm ---------------------------------------------------------------------------------

std::string check_gemm(const loom_graph_t& graph, const loom_node_t& node) {
  const loom_value_info_t* a = sdk::node_input(graph, node, 0);
  const loom_value_info_t* bv = sdk::node_input(graph, node, 1);
  const loom_value_info_t* c = sdk::node_input(graph, node, 2);
  for (auto [v, role] : {std::pair{a, "input A"}, {bv, "input B"}})
    if (auto r = require_dtype(v, role, {LOOM_DTYPE_FLOAT32}); !r.empty()) return r;
  if (a->rank != 2 || bv->rank != 2) return "Gemm inputs must be matrices";
  if (c) {
    if (auto r = require_dtype(c, "input C", {LOOM_DTYPE_FLOAT32}); !r.empty()) return r;
    if (auto r = require_rank(c, "input C", 2); !r.empty()) return r;
  }
  return "";
}

void build_gemm(Builder& b, const loom_node_t& node) {
  sdk::Attributes attrs(node);
  const TensorInfo& a = b.input(node, 0);
  const TensorInfo& bt = b.input(node, 1);
  const TensorInfo* c = b.has_input(node, 2) ? &b.input(node, 2) : nullptr;
  bool ta = attrs.get_int("transA", 0) != 0, tb = attrs.get_int("transB", 0) != 0;
  GemmSpec g;
  g.m = ta ? a.dims[1] : a.dims[0];
  g.k = ta ? a.dims[0] : a.dims[1];
  g.n = tb ? bt.dims[0] : bt.dims[1];
  if ((tb ? bt.dims[1] : bt.dims[0]) != g.k)
    sdk::fail(LOOM_ERROR_INVALID_MODEL,
              std::string("Gemm node '") + node.name + "': inner dimensions of A and B differ");
  g.a_sm = ta ? 1 : g.k;
  g.a_sk = ta ? g.m : 1;
  g.b_sk = tb ? 1 : g.n;
  g.b_sn = tb ? g.k : 1;
  g.alpha = attrs.get_float("alpha", 1.0f);
  g.beta = attrs.get_float("beta", 1.0f);
  if (c && c->elements() > 0) {
    std::vector<int64_t> cd = c->dims;
    while (cd.size() < 2) cd.insert(cd.begin(), 1);
    if ((cd[0] != 1 && cd[0] != g.m) || (cd[1] != 1 && cd[1] != g.n))
      sdk::fail(LOOM_ERROR_INVALID_MODEL,
                std::string("Gemm node '") + node.name + "': C does not broadcast to [M, N]");
    g.has_c = true;
    g.c_sm = cd[0] == 1 ? 0 : cd[1];
    g.c_sn = cd[1] == 1 ? 0 : 1;
  }
  auto [epilogue, y] = b.fuse_activation(node);
  emit(b, g, a.loc, bt.loc, c ? &c->loc : nullptr, epilogue, y->loc);
}

// ---- MatMul -------------------------------------------------------------------------------

std::string check_matmul(const loom_graph_t& graph, const loom_node_t& node) {
  const loom_value_info_t* a = sdk::node_input(graph, node, 0);
  const loom_value_info_t* bv = sdk::node_input(graph, node, 1);
  for (auto [v, role] : {std::pair{a, "input A"}, {bv, "input B"}}) {
    if (auto r = require_dtype(v, role, {LOOM_DTYPE_FLOAT32}); !r.empty()) return r;
    if (auto r = require_rank(v, role, 8); !r.empty()) return r;
    if (v->rank < 1) return std::string(role) + " is a scalar";
  }
  return "";
}

// The constant bias of an Add that reads `y` ([.., N] with all leading dims 1), or nullptr.
const TensorInfo* bias_of_add(Builder& b, const loom_node_t& add, int64_t n) {
  if (std::string(add.op_type) != "Add" || add.num_inputs != 2) return nullptr;
  const loom_value_info_t* other = sdk::node_input(b.graph(), add, 1);
  if (!other || !(other->flags & LOOM_VALUE_CONSTANT) || other->dtype != LOOM_DTYPE_FLOAT32 ||
      other->rank < 1 || other->dims[other->rank - 1] != n)
    return nullptr;
  for (int32_t i = 0; i + 1 < other->rank; ++i)
    if (other->dims[i] != 1) return nullptr;
  const loom_value_info_t* out = sdk::node_output(b.graph(), add, 0);
  const loom_value_info_t* in = sdk::node_input(b.graph(), add, 0);
  if (!out || !in || out->rank != in->rank) return nullptr;  // Add must not broadcast the input
  for (int32_t i = 0; i < in->rank; ++i)
    if (out->dims[i] != in->dims[i]) return nullptr;
  return &b.input(add, 1);
}

void build_matmul(Builder& b, const loom_node_t& node) {
  const TensorInfo& a = b.input(node, 0);
  const TensorInfo& bt = b.input(node, 1);
  std::vector<int64_t> ad = a.dims, bd = bt.dims;
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  GemmSpec g;
  g.m = ad[ad.size() - 2];
  g.k = ad.back();
  g.n = bd.back();
  if (bd[bd.size() - 2] != g.k)
    sdk::fail(LOOM_ERROR_INVALID_MODEL,
              std::string("MatMul node '") + node.name + "': inner dimensions of A and B differ");
  g.a_sm = g.k, g.a_sk = 1, g.b_sk = g.n, g.b_sn = 1;
  // Batch dims broadcast; strides 0 where an input has 1.
  size_t ar = ad.size() - 2, br = bd.size() - 2, r = std::max(ar, br);
  std::vector<int64_t> out, sa, sb;
  int64_t a_mat = g.m * g.k, b_mat = g.k * g.n;
  std::vector<int64_t> a_b(ad.begin(), ad.end() - 2), b_b(bd.begin(), bd.end() - 2);
  a_b.insert(a_b.begin(), r - ar, 1);
  b_b.insert(b_b.begin(), r - br, 1);
  auto a_str = strides_of(a_b), b_str = strides_of(b_b);
  for (size_t i = 0; i < r; ++i) {
    int64_t d = std::max(a_b[i], b_b[i]);
    if ((a_b[i] != d && a_b[i] != 1) || (b_b[i] != d && b_b[i] != 1))
      sdk::fail(LOOM_ERROR_INVALID_MODEL,
                std::string("MatMul node '") + node.name + "': batch dims do not broadcast");
    if (d == 1) continue;
    int64_t s_a = a_b[i] == 1 ? 0 : a_str[i] * a_mat, s_b = b_b[i] == 1 ? 0 : b_str[i] * b_mat;
    if (!out.empty() && sa.back() == s_a * d && sb.back() == s_b * d) {
      out.back() *= d;
      sa.back() = s_a;
      sb.back() = s_b;
      continue;
    }
    out.push_back(d);
    sa.push_back(s_a);
    sb.push_back(s_b);
  }
  if (out.size() > 3)
    sdk::fail(LOOM_ERROR_UNSUPPORTED,
              std::string("MatMul node '") + node.name + "': more than 3 independent batch dims");
  g.batch = out, g.a_batch = sa, g.b_batch = sb;

  const loom_node_t* after = &node;
  const Loc* c = nullptr;
  if (const loom_node_t* next = b.sole_consumer(node))
    if (const TensorInfo* bias = bias_of_add(b, *next, g.n)) {
      g.has_c = true;
      g.c_sm = 0;
      g.c_sn = 1;
      c = &bias->loc;
      b.absorb(*next);
      after = next;
    }
  auto [epilogue, y] = b.fuse_activation(*after);
  emit(b, g, a.loc, bt.loc, c, epilogue, y->loc);
}

}  // namespace

void add_gemm_ops(OpTable& t) {
  t.add("Gemm", {check_gemm, build_gemm});
  t.add("MatMul", {check_matmul, build_matmul});
}

}  // namespace loom::vulkan
