// Gemm and MatMul (batched, with numpy broadcasting of the batch dimensions), lowered to the
// strided batched GEMM kernels. Conv's im2col path uses emit_gemm as well.
#include "ops.hpp"

namespace loom::opencl {

void emit_gemm(Executable& exe, const GemmCall& g, const std::string& label) {
  if (g.M <= 0 || g.N <= 0 || g.batch <= 0) return;
  // GPUs: 64x64 tiles staged in local memory. CPU drivers: register blocks from global memory
  // (work-group barriers are expensive there, caches tile for free). Thin products
  // (matrix-vector) would leave most of a block idle: one output per work-item.
  enum class Kind { kTiled, kBlocked, kSimple } kind = Kind::kSimple;
  if (g.M >= 16 && g.N >= 16)
    kind = exe.device().prefers_local_tiles() ? Kind::kTiled : Kind::kBlocked;
  const char* name = kind == Kind::kTiled
                         ? "gemm_tiled"
                         : (kind == Kind::kBlocked ? "gemm_blocked" : "gemm_simple");
  KernelCall call(exe, name, label);
  call.buffer(g.a, g.a_extra).i32(g.sab).i32(g.sam).i32(g.sak);
  call.buffer(g.b, g.b_extra).i32(g.sbb).i32(g.sbk).i32(g.sbn);
  call.buffer(g.c, g.c_extra).i32(g.scb).i32(g.ldc);
  call.buffer(g.bias >= 0 ? g.bias : g.c, g.bias >= 0 ? g.bias_extra : g.c_extra)
      .i32(g.sqb)
      .i32(g.sqm)
      .i32(g.sqn)
      .i32(g.bias >= 0 ? 1 : 0);
  call.i32(g.M).i32(g.N).i32(g.K).f32(g.alpha).f32(g.beta).f32(g.act_min).f32(g.act_max);
  auto batch = static_cast<size_t>(g.batch);
  auto round_up = [](int64_t n, int64_t m) { return static_cast<size_t>((n + m - 1) / m * m); };
  // Fixed work-group shapes: drivers that compile per work-group size (PoCL) then build each
  // kernel once, whatever the matrix sizes.
  switch (kind) {
    case Kind::kTiled:
      call.launch(3, {round_up(g.N, 64) / 4, round_up(g.M, 64) / 4, batch}, {16, 16, 1});
      break;
    case Kind::kBlocked:
      call.launch(3, {round_up((g.N + 7) / 8, 16), round_up((g.M + 3) / 4, 4), batch}, {16, 4, 1});
      break;
    case Kind::kSimple:
      call.launch(3, {round_up(g.N, 64), static_cast<size_t>(g.M), batch}, {64, 1, 1});
      break;
  }
}

namespace {

// ---- Gemm ----------------------------------------------------------------------------------

std::string check_gemm(const NodeInfo& node) {
  if (std::string r = expect_all_float(node); !r.empty()) return r;
  for (size_t i = 0; i < 2; ++i) {
    const loom_value_info_t* v = node.input(i);
    if (v && v->rank >= 0 && v->rank != 2) return "A and B must be matrices";
  }
  return "";
}

void lower_gemm(Executable& exe, const NodeInfo& node, const Fusion& fusion) {
  const Value& a = exe.value(node.input_id(0));
  const Value& b = exe.value(node.input_id(1));
  bool trans_a = node.attrs.get_int("transA", 0) != 0;
  bool trans_b = node.attrs.get_int("transB", 0) != 0;
  GemmCall g;
  g.M = trans_a ? a.shape[1] : a.shape[0];
  g.K = trans_a ? a.shape[0] : a.shape[1];
  g.N = trans_b ? b.shape[0] : b.shape[1];
  if ((trans_b ? b.shape[1] : b.shape[0]) != g.K)
    sdk::fail(LOOM_ERROR_INVALID_MODEL, node.describe() + ": inner dimensions differ");
  g.a = node.input_id(0);
  g.sam = trans_a ? 1 : g.K;
  g.sak = trans_a ? g.M : 1;
  g.b = node.input_id(1);
  g.sbk = trans_b ? 1 : g.N;
  g.sbn = trans_b ? g.K : 1;
  g.c = fusion.output;
  g.ldc = g.N;
  g.alpha = node.attrs.get_float("alpha", 1.0f);
  g.beta = node.attrs.get_float("beta", 1.0f);
  if (node.input(2)) {
    g.bias = node.input_id(2);
    std::vector<int64_t> strides = broadcast_strides(exe.value(g.bias).shape, {g.M, g.N});
    g.sqm = strides[0];
    g.sqn = strides[1];
  }
  g.act_min = fusion.act_min;
  g.act_max = fusion.act_max;
  emit_gemm(exe, g, node.describe());
}

// ---- MatMul --------------------------------------------------------------------------------

std::string check_matmul(const NodeInfo& node) {
  return expect_all_float(node);
}

void lower_matmul(Executable& exe, const NodeInfo& node, const Fusion& fusion) {
  std::vector<int64_t> as = exe.value(node.input_id(0)).shape;
  std::vector<int64_t> bs = exe.value(node.input_id(1)).shape;
  if (as.empty() || bs.empty())
    sdk::fail(LOOM_ERROR_INVALID_MODEL, node.describe() + ": MatMul of a scalar");
  if (as.size() == 1) as.insert(as.begin(), 1);  // [K] -> [1, K]
  if (bs.size() == 1) bs.push_back(1);           // [K] -> [K, 1]
  GemmCall g;
  g.M = as[as.size() - 2];
  g.K = as.back();
  g.N = bs.back();
  if (bs[bs.size() - 2] != g.K)
    sdk::fail(LOOM_ERROR_INVALID_MODEL, node.describe() + ": inner dimensions differ");
  g.a = node.input_id(0);
  g.b = node.input_id(1);
  g.c = fusion.output;
  g.sam = g.K;
  g.sak = 1;
  g.sbk = g.N;
  g.sbn = 1;
  g.ldc = g.N;
  g.act_min = fusion.act_min;
  g.act_max = fusion.act_max;

  std::vector<int64_t> a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  int64_t b_count = elements_of(b_batch);
  if (b_count == 1) {
    // B is one matrix: A's batch dimensions fold into M (A and C rows are contiguous).
    g.M *= elements_of(a_batch);
    emit_gemm(exe, g, node.describe());
    return;
  }
  // Broadcast the batch dimensions; one launch when the offsets grow linearly with the batch
  // index (the usual case), else one launch per batch.
  size_t rank = std::max(a_batch.size(), b_batch.size());
  std::vector<int64_t> out_batch(rank, 1);
  auto pad = [&](std::vector<int64_t> v) {
    v.insert(v.begin(), rank - v.size(), 1);
    return v;
  };
  std::vector<int64_t> ab = pad(a_batch), bb = pad(b_batch);
  for (size_t i = 0; i < rank; ++i) out_batch[i] = std::max(ab[i], bb[i]);
  std::vector<int64_t> sa = broadcast_strides(ab, out_batch), sb = broadcast_strides(bb, out_batch);
  int64_t count = elements_of(out_batch);
  std::vector<int64_t> a_off(count), b_off(count);
  for (int64_t i = 0; i < count; ++i) {
    int64_t r = i, oa = 0, ob = 0;
    for (size_t d = rank; d-- > 0;) {
      int64_t c = r % out_batch[d];
      r /= out_batch[d];
      oa += c * sa[d];
      ob += c * sb[d];
    }
    a_off[i] = oa * g.M * g.K;
    b_off[i] = ob * g.K * g.N;
  }
  bool linear = true;
  for (int64_t i = 0; i < count && linear; ++i)
    linear =
        a_off[i] == i * (count > 1 ? a_off[1] : 0) && b_off[i] == i * (count > 1 ? b_off[1] : 0);
  g.scb = g.M * g.N;
  if (linear) {
    g.batch = count;
    g.sab = count > 1 ? a_off[1] : 0;
    g.sbb = count > 1 ? b_off[1] : 0;
    emit_gemm(exe, g, node.describe());
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    GemmCall one = g;
    one.a_extra = a_off[i];
    one.b_extra = b_off[i];
    one.c_extra = i * g.M * g.N;
    emit_gemm(exe, one, node.describe());
  }
}

}  // namespace

void add_gemm_ops(OpTable& table) {
  table.add("Gemm", {check_gemm, lower_gemm});
  table.add("MatMul", {check_matmul, lower_matmul});
}

}  // namespace loom::opencl
