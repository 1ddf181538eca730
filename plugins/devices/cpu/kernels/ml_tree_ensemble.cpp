// ai.onnx.ml TreeEnsemble (opset 5): Y[n, t] aggregates, over the trees, the weights of the
// leaves row n reaches whose target is t.
//   A tree starts at tree_roots[k] and goes to the true or false branch of each interior node:
//   X[n, featureid] compared with the node's split by nodes_modes (LEQ, LT, GTE, GT, EQ, NEQ,
//   or MEMBER of the node's set; sets are consecutive runs of membership_values separated by
//   NaN, taken by the MEMBER nodes in order), a NaN feature going true where
//   nodes_missing_value_tracks_true says so. A branch's id is a node or, when nodes_trueleafs /
//   nodes_falseleafs says so, a leaf (leaf_weights, leaf_targetids). A root whose two branches
//   are the same leaf is that leaf.
//   aggregate_function: AVERAGE, SUM (default), MIN, MAX (targets no leaf reached keep 0, or the
//   type's largest / lowest value); then post_transform: NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO
//   (zeros excluded), PROBIT. Y has X's type ([N, F] float, double or float16).
// Every index is checked before the walk, and a walk longer than the node count (a cycle in a
// hostile model) is an error.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <set>
#include <vector>

#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

enum Mode : uint8_t { kLeq = 0, kLt = 1, kGte = 2, kGt = 3, kEq = 4, kNeq = 5, kMember = 6 };

// A tensor attribute's values as double.
std::vector<double> tensor_values(const Attributes& a, const char* name, const std::string& where,
                                  bool required) {
  const loom_value_info_t* t = a.get_tensor(name);
  if (!t) {
    if (required) fail(LOOM_ERROR_INVALID_MODEL, where + ": attribute " + name + " is required");
    return {};
  }
  const size_t count = static_cast<size_t>(sdk::element_count(t->rank, t->dims));
  if (count > 0 && !t->data) fail(LOOM_ERROR_INVALID_MODEL, where + ": " + name + " has no data");
  std::vector<double> out(count);
  dispatch<kNumeric>(t->dtype, where + " " + name, [&]<typename T>() {
    const T* p = static_cast<const T*>(t->data);
    for (size_t i = 0; i < count; ++i) out[i] = convert<double>(p[i]);
  });
  return out;
}

std::vector<int64_t> ints_of(const Attributes& a, const char* name, const std::string& where,
                             bool required) {
  auto v = a.get_ints(name);
  if (!v && required)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": attribute " + name + " is required");
  return v ? std::vector<int64_t>(v->begin(), v->end()) : std::vector<int64_t>{};
}

// PROBIT: sqrt(2) * erfinv(2p - 1), the standard normal quantile of p. erfinv by bisection on
// std::erf (monotonic; 200 halvings of [-6, 6] reach the spacing of doubles), then a Newton
// step: exact to rounding, and PROBIT ensembles are rare enough not to need a faster form.
double probit(double p) {
  if (std::isnan(p) || p < 0 || p > 1) return NAN;
  if (p == 0) return -INFINITY;
  if (p == 1) return INFINITY;
  const double y = 2 * p - 1;
  double lo = -6, hi = 6;
  for (int i = 0; i < 200 && lo < hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (mid == lo || mid == hi) break;
    (std::erf(mid) < y ? lo : hi) = mid;
  }
  double x = 0.5 * (lo + hi);
  const double slope = 2 / std::sqrt(std::numbers::pi) * std::exp(-x * x);
  if (slope > 0) x -= (std::erf(x) - y) / slope;
  return std::sqrt(2.0) * x;
}

struct Ensemble {
  std::vector<double> splits;
  std::vector<int64_t> features, true_ids, false_ids, true_leafs, false_leafs, tracks_nan;
  std::vector<uint8_t> modes;
  std::vector<std::set<double>> members;  // per node (MEMBER nodes only)
  std::vector<double> leaf_weights;
  std::vector<int64_t> leaf_targets;
  std::vector<int64_t> roots;
};

void tree_ensemble(KernelContext& ctx) {
  const std::string where = ctx.where();
  const Attributes& a = ctx.attrs();
  const loom_tensor_t& x = ctx.required_input(0);
  if (x.rank != 2)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         where + ": X must be [N, F], got rank " + std::to_string(x.rank));
  const int64_t rows = x.dims[0], features = x.dims[1];

  Ensemble e;
  e.splits = tensor_values(a, "nodes_splits", where, true);
  const std::vector<double> modes = tensor_values(a, "nodes_modes", where, true);
  e.features = ints_of(a, "nodes_featureids", where, true);
  e.true_ids = ints_of(a, "nodes_truenodeids", where, true);
  e.false_ids = ints_of(a, "nodes_falsenodeids", where, true);
  e.true_leafs = ints_of(a, "nodes_trueleafs", where, true);
  e.false_leafs = ints_of(a, "nodes_falseleafs", where, true);
  e.tracks_nan = ints_of(a, "nodes_missing_value_tracks_true", where, false);
  e.leaf_weights = tensor_values(a, "leaf_weights", where, true);
  e.leaf_targets = ints_of(a, "leaf_targetids", where, true);
  e.roots = ints_of(a, "tree_roots", where, true);
  const std::vector<double> membership = tensor_values(a, "membership_values", where, false);
  const int64_t targets = a.get_int("n_targets", 0);
  const int64_t aggregate = a.get_int("aggregate_function", 1);
  const int64_t post = a.get_int("post_transform", 0);

  const size_t nodes = e.splits.size(), leaves = e.leaf_weights.size();
  const auto bad = [&](const std::string& what) {
    fail(LOOM_ERROR_INVALID_MODEL, where + ": " + what);
  };
  for (size_t size : {modes.size(), e.features.size(), e.true_ids.size(), e.false_ids.size(),
                      e.true_leafs.size(), e.false_leafs.size()})
    if (size != nodes) bad("the nodes_* attributes differ in length");
  if (!e.tracks_nan.empty() && e.tracks_nan.size() != nodes)
    bad("nodes_missing_value_tracks_true differs in length from the other nodes_* attributes");
  if (e.leaf_targets.size() != leaves) bad("leaf_targetids and leaf_weights differ in length");
  if (targets <= 0) bad("n_targets must be positive");
  if (aggregate < 0 || aggregate > 3) bad("aggregate_function must be 0 to 3");
  if (post < 0 || post > 4) bad("post_transform must be 0 to 4");
  e.modes.resize(nodes);
  e.members.resize(nodes);
  size_t next_member = 0;
  for (size_t i = 0; i < nodes; ++i) {
    if (!(modes[i] >= 0 && modes[i] <= 6)) bad("nodes_modes must be 0 to 6");
    e.modes[i] = static_cast<uint8_t>(modes[i]);
    if (e.features[i] < 0 || e.features[i] >= features)
      bad("feature id " + std::to_string(e.features[i]) + " is outside X's " +
          std::to_string(features) + " features");
    for (int k = 0; k < 2; ++k) {
      const int64_t id = k ? e.false_ids[i] : e.true_ids[i];
      const bool leaf = (k ? e.false_leafs[i] : e.true_leafs[i]) != 0;
      if (id < 0 || static_cast<size_t>(id) >= (leaf ? leaves : nodes))
        bad("branch id " + std::to_string(id) + " is outside the " +
            std::to_string(leaf ? leaves : nodes) + (leaf ? " leaves" : " nodes"));
    }
    if (e.modes[i] == kMember) {
      while (next_member < membership.size() && !std::isnan(membership[next_member]))
        e.members[i].insert(membership[next_member++]);
      if (next_member >= membership.size()) bad("membership_values has too few sets");
      ++next_member;  // the NaN ending this set
    }
  }
  for (int64_t t : e.leaf_targets)
    if (t < 0 || t >= targets)
      bad("leaf target id " + std::to_string(t) + " is not below n_targets");
  for (int64_t r : e.roots)
    if (r < 0 || static_cast<size_t>(r) >= nodes)
      bad("tree root " + std::to_string(r) + " is not a node");

  std::vector<double> in(static_cast<size_t>(rows * features));
  dispatch<kFloats>(x.dtype, where, [&]<typename T>() {
    const T* p = sdk::data_of<const T>(x);
    for (size_t i = 0; i < in.size(); ++i) in[i] = convert<double>(p[i]);
  });

  // The leaf that row `v` reaches from root `r`.
  auto leaf_of = [&](const double* v, int64_t r) -> size_t {
    size_t node = static_cast<size_t>(r);
    if (e.true_leafs[node] && e.false_leafs[node] && e.true_ids[node] == e.false_ids[node])
      return static_cast<size_t>(e.true_ids[node]);
    for (size_t steps = 0; steps <= nodes; ++steps) {
      const double f = v[e.features[node]], s = e.splits[node];
      bool go = false;
      switch (e.modes[node]) {
        case kLeq:
          go = f <= s;
          break;
        case kLt:
          go = f < s;
          break;
        case kGte:
          go = f >= s;
          break;
        case kGt:
          go = f > s;
          break;
        case kEq:
          go = f == s;
          break;
        case kNeq:
          go = f != s;
          break;
        default:
          go = e.members[node].count(f) > 0;
          break;
      }
      if (std::isnan(f) && !e.tracks_nan.empty() && e.tracks_nan[node]) go = true;
      const int64_t id = go ? e.true_ids[node] : e.false_ids[node];
      if ((go ? e.true_leafs[node] : e.false_leafs[node]) != 0) return static_cast<size_t>(id);
      node = static_cast<size_t>(id);
    }
    return leaves;  // walked longer than the tree has nodes: a cycle
  };

  const double lowest = x.dtype == LOOM_DTYPE_FLOAT64   ? std::numeric_limits<double>::lowest()
                        : x.dtype == LOOM_DTYPE_FLOAT16 ? -65504.0
                                                        : std::numeric_limits<float>::lowest();
  const double start = aggregate == 2 ? -lowest : aggregate == 3 ? lowest : 0.0;
  std::vector<double> y(static_cast<size_t>(rows * targets), start);
  for (int64_t n = 0; n < rows; ++n) {
    const double* v = in.data() + n * features;
    double* out = y.data() + n * targets;
    for (int64_t r : e.roots) {
      const size_t leaf = leaf_of(v, r);
      if (leaf >= leaves) bad("the tree at root " + std::to_string(r) + " has a cycle");
      const double w = e.leaf_weights[leaf];
      double& o = out[e.leaf_targets[leaf]];
      switch (aggregate) {
        case 0:
          o += w / static_cast<double>(e.roots.size());
          break;
        case 1:
          o += w;
          break;
        case 2:
          o = std::min(o, w);
          break;
        default:
          o = std::max(o, w);
          break;
      }
    }
    if (post == 1 || post == 3) {  // SOFTMAX, SOFTMAX_ZERO (zeros stay 0 and count for nothing)
      double m = -INFINITY, sum = 0;
      for (int64_t t = 0; t < targets; ++t)
        if (post == 1 || out[t] != 0) m = std::max(m, out[t]);
      for (int64_t t = 0; t < targets; ++t)
        if (post == 1 || out[t] != 0) sum += out[t] = std::exp(out[t] - m);
      for (int64_t t = 0; t < targets; ++t)
        if (post == 1 || out[t] != 0) out[t] /= sum;
    } else if (post == 2) {
      for (int64_t t = 0; t < targets; ++t) out[t] = 1 / (1 + std::exp(-out[t]));
    } else if (post == 4) {
      for (int64_t t = 0; t < targets; ++t) out[t] = probit(out[t]);
    }
  }
  const std::vector<int64_t> dims{rows, targets};
  loom_tensor_t& result = ctx.allocate_output(0, x.dtype, dims);
  dispatch<kFloats>(x.dtype, where, [&]<typename T>() {
    T* p = sdk::data_of<T>(result);
    for (size_t i = 0; i < y.size(); ++i) p[i] = convert<T>(y[i]);
  });
}

}  // namespace

LOOM_CPU_KERNEL_DOMAIN("ai.onnx.ml", "TreeEnsemble", 5, tree_ensemble, nullptr);

}  // namespace loom::cpu
