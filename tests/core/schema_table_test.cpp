// The built-in schema table: its content against the ONNX spec (spot checks here, the full
// comparison with onnx.defs when Debian's python3-onnx is installed), the opset-18 and opset-19
// additions, the generated opset 20..28 rows,
// reproducibility of the generated file, and robustness of every inference function against
// inputs of unknown shape.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "schemas/builtin_schemas.hpp"
#include "schemas/schema_rows.hpp"

namespace {

using loom::core::builtin_schemas;
using loom::core::BuiltinSchema;

const BuiltinSchema* find_exact(const std::string& domain, const std::string& op, int version) {
  for (const BuiltinSchema& s : builtin_schemas())
    if (domain == s.domain && op == s.op_type && s.since_version == version) return &s;
  return nullptr;
}

// The schema a model importing `opset` gets: the newest version not newer than it.
const BuiltinSchema* resolve(const std::string& domain, const std::string& op, int opset) {
  const BuiltinSchema* best = nullptr;
  for (const BuiltinSchema& s : builtin_schemas())
    if (domain == s.domain && op == s.op_type && s.since_version <= opset &&
        (!best || s.since_version > best->since_version))
      best = &s;
  return best;
}

TEST(SchemaTable, EntriesAreUniqueAndWellFormed) {
  std::set<std::tuple<std::string, std::string, int>> seen;
  for (const BuiltinSchema& s : builtin_schemas()) {
    SCOPED_TRACE(std::string(s.domain) + "::" + s.op_type + "-" + std::to_string(s.since_version));
    EXPECT_TRUE(seen.emplace(s.domain, s.op_type, s.since_version).second) << "duplicate";
    std::string domain = s.domain;
    ASSERT_TRUE(domain.empty() || domain == "ai.onnx.ml" || domain == "ai.onnx.preview" ||
                domain == "ai.onnx.preview.training");
    EXPECT_GE(s.since_version, 1);
    EXPECT_LE(s.since_version, domain.empty() ? 28 : domain == "ai.onnx.ml" ? 5 : 1);
    EXPECT_GE(s.min_inputs, 0);
    EXPECT_TRUE(s.max_inputs == -1 || s.max_inputs >= s.min_inputs);
    EXPECT_GE(s.min_outputs, 0);
    EXPECT_TRUE(s.max_outputs == -1 || s.max_outputs >= s.min_outputs);
    if (s.deprecated) {
      EXPECT_EQ(s.infer, nullptr);
    }
  }
  EXPECT_GE(seen.size(), 440u + 25u);
}

TEST(SchemaTable, InferenceTablesNameRealSchemas) {
  for (const std::string& problem : loom::core::infer_entry_problems()) ADD_FAILURE() << problem;
  // Nearly every tensor op has inference; what lacks it works on sequences, maps, optionals.
  size_t with_inference = 0;
  for (const BuiltinSchema& s : builtin_schemas()) with_inference += s.infer != nullptr;
  EXPECT_GT(with_inference, 400u);
}

TEST(SchemaTable, SpotChecksAgainstTheSpec) {
  // Version history of Reshape: the shape moved from an attribute to an input in 5.
  for (int v : {1, 5, 13, 14}) EXPECT_NE(find_exact("", "Reshape", v), nullptr) << v;
  EXPECT_EQ(find_exact("", "Reshape", 2), nullptr);
  EXPECT_EQ(resolve("", "Reshape", 12)->since_version, 5);
  // Upsample: removed in opset 10.
  ASSERT_NE(find_exact("", "Upsample", 10), nullptr);
  EXPECT_TRUE(find_exact("", "Upsample", 10)->deprecated);
  EXPECT_FALSE(find_exact("", "Upsample", 9)->deprecated);
  // Variadic counts.
  const BuiltinSchema* concat = resolve("", "Concat", 13);
  EXPECT_EQ(concat->min_inputs, 1);
  EXPECT_EQ(concat->max_inputs, -1);
  const BuiltinSchema* layer_norm = find_exact("", "LayerNormalization", 17);
  ASSERT_NE(layer_norm, nullptr);
  EXPECT_EQ(layer_norm->max_outputs, 3);
  EXPECT_NE(find_exact("ai.onnx.ml", "LabelEncoder", 2), nullptr);
  EXPECT_NE(find_exact("ai.onnx.ml", "TreeEnsembleClassifier", 3), nullptr);
}

TEST(SchemaTable, Opset18Forms) {
  // ReduceSum took axes as an input in 13; at opset 18 that form still applies.
  const BuiltinSchema* reduce_sum = resolve("", "ReduceSum", 18);
  ASSERT_NE(reduce_sum, nullptr);
  EXPECT_EQ(reduce_sum->since_version, 13);
  EXPECT_EQ(reduce_sum->max_inputs, 2);
  // The other reductions moved axes to an input in 18.
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                         "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    SCOPED_TRACE(op);
    EXPECT_EQ(resolve("", op, 17)->max_inputs, 1);
    const BuiltinSchema* r = resolve("", op, 18);
    EXPECT_EQ(r->since_version, 18);
    EXPECT_EQ(r->max_inputs, 2);
    EXPECT_NE(r->infer, nullptr);
  }
  EXPECT_EQ(resolve("", "Split", 18)->since_version, 18);
  EXPECT_EQ(resolve("", "Pad", 18)->max_inputs, 4);
  EXPECT_EQ(resolve("", "Resize", 18)->since_version, 18);
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "CenterCropPad",
                         "Col2Im", "GroupNormalization", "Mish", "ScatterElements", "ScatterND",
                         "LpPool", "OptionalGetElement", "OptionalHasElement"})
    EXPECT_NE(find_exact("", op, 18), nullptr) << op;
  EXPECT_EQ(resolve("", "BitwiseAnd", 17), nullptr);
}

TEST(SchemaTable, Opset19Forms) {
  // Every op ONNX 1.14 versioned in opset 19 except DeformConv (no device implements it), each
  // with its inference and the counts of the version before.
  for (const char* op :
       {"AveragePool", "Cast", "CastLike", "Constant", "DequantizeLinear", "Equal", "Identity",
        "If", "Loop", "Pad", "QuantizeLinear", "Reshape", "Resize", "Scan", "Shape", "Size"}) {
    SCOPED_TRACE(op);
    const BuiltinSchema* s = find_exact("", op, 19);
    ASSERT_NE(s, nullptr);
    const BuiltinSchema* before = resolve("", op, 18);
    ASSERT_NE(before, nullptr);
    EXPECT_EQ(s->min_inputs, before->min_inputs);
    EXPECT_EQ(s->max_inputs, before->max_inputs);
    EXPECT_EQ(s->min_outputs, before->min_outputs);
    EXPECT_EQ(s->max_outputs, before->max_outputs);
    EXPECT_EQ(s->infer != nullptr, before->infer != nullptr);
  }
  // DeformConv is new in 19 (the cpu device runs it).
  const BuiltinSchema* deform = resolve("", "DeformConv", 19);
  ASSERT_NE(deform, nullptr);
  EXPECT_EQ(deform->since_version, 19);
  EXPECT_EQ(deform->min_inputs, 3);
  EXPECT_EQ(deform->max_inputs, 5);
  EXPECT_EQ(resolve("", "Relu", 19)->since_version, 14);
}

TEST(SchemaTable, NewerOpsetsCarryEveryVersion) {
  // Opsets 20..28 (newer_schema_table.cpp, generated from the current suite's onnx): a model at
  // opset 28 resolves each op to its newest version, so none silently takes an older one's
  // semantics.
  EXPECT_EQ(resolve("", "GroupNormalization", 28)->since_version, 21);
  EXPECT_EQ(resolve("", "GroupNormalization", 20)->since_version, 18);
  EXPECT_EQ(resolve("", "DFT", 20)->max_inputs, 3);
  EXPECT_EQ(resolve("", "DFT", 19)->max_inputs, 2);
  EXPECT_EQ(resolve("", "SpaceToDepth", 28)->since_version, 28);
  EXPECT_EQ(resolve("", "QuantizeLinear", 28)->since_version, 28);
  EXPECT_EQ(resolve("", "Attention", 24)->max_inputs, 7);
  EXPECT_EQ(resolve("", "Attention", 22), nullptr);
  for (const char* op : {"RMSNormalization", "RotaryEmbedding", "Gelu", "Swish", "SwiGLU",
                         "CumProd", "BitCast", "TensorScatter", "AffineGrid"})
    EXPECT_NE(resolve("", op, 28), nullptr) << op;
  // ai.onnx.ml 5 removed the two tree ensembles for TreeEnsemble.
  EXPECT_TRUE(resolve("ai.onnx.ml", "TreeEnsembleClassifier", 5)->deprecated);
  EXPECT_FALSE(resolve("ai.onnx.ml", "TreeEnsembleClassifier", 4)->deprecated);
  EXPECT_EQ(resolve("", "Relu", 28)->since_version, 14);
}

// Output of a command, or nullopt when it cannot run or fails.
std::optional<std::string> run(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return std::nullopt;
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  if (pclose(pipe) != 0) return std::nullopt;
  return out;
}

const char* kPython = "/usr/bin/python3";

// Every schema version of onnx.defs (opsets <= 17, ai.onnx.ml <= 3, which later onnx releases
// do not change) is in the table with the same counts.
TEST(SchemaTable, MatchesOnnxDefs) {
  std::optional<std::string> listing = run(
      std::string(kPython) +
      " -c \"import onnx.defs as d\n"
      "for s in d.get_all_schemas_with_history():\n"
      "  if (s.domain=='' and s.since_version<=17) or (s.domain=='ai.onnx.ml' and "
      "s.since_version<=3):\n"
      "    print(s.domain or '-', s.name, s.since_version, s.min_input, s.max_input, s.min_output, "
      "s.max_output, int(s.deprecated))\" 2>/dev/null");
  if (!listing) GTEST_SKIP() << "python3-onnx is not installed";
  std::istringstream in(*listing);
  std::string domain, name;
  int version, min_in, max_in, min_out, max_out, deprecated, count = 0;
  while (in >> domain >> name >> version >> min_in >> max_in >> min_out >> max_out >> deprecated) {
    ++count;
    if (domain == "-") domain.clear();
    SCOPED_TRACE(domain + "::" + name + "-" + std::to_string(version));
    const BuiltinSchema* s = find_exact(domain, name, version);
    ASSERT_NE(s, nullptr) << "missing from the table";
    EXPECT_EQ(s->min_inputs, min_in);
    EXPECT_EQ(s->max_inputs, max_in == 2147483647 ? -1 : max_in);
    EXPECT_EQ(s->min_outputs, min_out);
    EXPECT_EQ(s->max_outputs, max_out == 2147483647 ? -1 : max_out);
    EXPECT_EQ(s->deprecated, deprecated != 0);
  }
  EXPECT_GE(count, 440);
}

// The committed generated file is what the generator produces from onnx 1.12.
TEST(SchemaTable, GeneratedFileIsReproducible) {
  std::optional<std::string> version =
      run(std::string(kPython) + " -c \"import onnx; print(onnx.__version__)\" 2>/dev/null");
  if (!version || version->rfind("1.12.", 0) != 0) GTEST_SKIP() << "needs python3-onnx 1.12";
  std::filesystem::path root =
      std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
  std::filesystem::path schemas = root / "core" / "src" / "schemas";
  if (!std::filesystem::exists(schemas / "generate_schema_table.py"))
    GTEST_SKIP() << "source tree not found from " << __FILE__;
  std::filesystem::path fresh = std::filesystem::temp_directory_path() /
                                ("loom_schema_table_" + std::to_string(::getpid()) + ".cpp");
  ASSERT_TRUE(run(std::string(kPython) + " " + (schemas / "generate_schema_table.py").string() +
                  " " + fresh.string() + " 2>/dev/null"));
  auto slurp = [](const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  std::string committed = slurp(schemas / "onnx_schema_table.cpp"), generated = slurp(fresh);
  std::filesystem::remove(fresh);
  EXPECT_FALSE(generated.empty());
  EXPECT_TRUE(committed == generated)
      << "onnx_schema_table.cpp differs from the generator's output";
}

// Every inference function copes with inputs of unknown rank and with inputs of known rank but
// unknown extents: it either infers something consistent or reports an invalid model (e.g. a
// missing required attribute), and never crashes or throws anything else.
TEST(SchemaTable, InferenceToleratesUnknownShapes) {
  const int64_t unknown4[4] = {-1, -1, -1, -1};
  for (const BuiltinSchema& s : builtin_schemas()) {
    if (!s.infer) continue;
    SCOPED_TRACE(std::string(s.domain) + "::" + s.op_type + "-" + std::to_string(s.since_version));
    for (int32_t rank : {-1, 4}) {
      size_t num_inputs =
          static_cast<size_t>(s.max_inputs == -1 ? std::max(s.min_inputs, 2) : s.max_inputs);
      size_t num_outputs = static_cast<size_t>(s.max_outputs == -1 ? 2 : s.max_outputs);
      loom_value_info_t value{};
      value.struct_size = sizeof value;
      value.name = "x";
      value.dtype = LOOM_DTYPE_FLOAT32;
      value.rank = rank;
      value.dims = unknown4;
      value.arena_offset = -1;
      std::vector<const loom_value_info_t*> inputs(num_inputs, &value);
      std::vector<int32_t> input_ids(num_inputs, 0), output_ids(num_outputs, 1);
      loom_node_t node{};
      node.struct_size = sizeof node;
      node.name = "n";
      node.op_type = s.op_type;
      node.domain = s.domain;
      node.opset = s.since_version;
      node.num_inputs = num_inputs;
      node.inputs = input_ids.data();
      node.num_outputs = num_outputs;
      node.outputs = output_ids.data();
      std::vector<loom_inferred_t> outputs(num_outputs);
      for (loom_inferred_t& o : outputs) {
        std::memset(&o, 0, sizeof o);
        o.struct_size = sizeof o;
        o.rank = -1;
      }
      try {
        s.infer(node, inputs, outputs);
      } catch (const loom::sdk::Error& e) {
        EXPECT_EQ(e.code(), LOOM_ERROR_INVALID_MODEL) << e.what();
        EXPECT_EQ(std::string(e.what()).rfind(std::string(s.op_type) + " node 'n': ", 0), 0u)
            << e.what();
        continue;
      }
      for (const loom_inferred_t& o : outputs) {
        EXPECT_GE(o.rank, -1);
        EXPECT_LE(o.rank, LOOM_MAX_RANK);
        for (int32_t k = 0; k < o.rank; ++k) EXPECT_GE(o.dims[k], -1);
      }
    }
  }
}

// Hostile-model robustness: every inference function, fed random shapes (unknown, zero, huge
// extents), random integer constants and random values of the common attributes, either infers
// something consistent or reports an invalid model. Deterministic (fixed seed); meaningful
// above all under LOOM_SANITIZE, where overflow or out-of-bounds reads fail the run.
TEST(SchemaTable, InferenceSurvivesRandomHostileNodes) {
  std::mt19937_64 rng(20261121);
  auto pick = [&](std::initializer_list<int64_t> choices) {
    return *(choices.begin() + static_cast<ptrdiff_t>(rng() % choices.size()));
  };
  const int64_t huge = int64_t{1} << 62;
  const char* int_attrs[] = {"axis",
                             "group",
                             "keepdims",
                             "transA",
                             "transB",
                             "blocksize",
                             "k",
                             "batch_dims",
                             "num_outputs",
                             "allowzero",
                             "ceil_mode",
                             "to",
                             "noop_with_empty_axes",
                             "hidden_size",
                             "num_scan_inputs",
                             "start",
                             "end",
                             "layout",
                             "stash_type",
                             "num_groups",
                             "onesided",
                             "select_last_index"};
  const char* ints_attrs[] = {"axes",         "perm",           "kernel_shape", "strides", "pads",
                              "dilations",    "shape",          "split",        "starts",  "ends",
                              "output_shape", "output_padding", "pooled_shape"};
  size_t runs = 0, rejected = 0;
  for (const BuiltinSchema& s : builtin_schemas()) {
    if (!s.infer) continue;
    SCOPED_TRACE(std::string(s.domain) + "::" + s.op_type + "-" + std::to_string(s.since_version));
    for (int trial = 0; trial < 40; ++trial) {
      size_t max_in = static_cast<size_t>(s.max_inputs == -1 ? s.min_inputs + 3 : s.max_inputs);
      size_t num_inputs = static_cast<size_t>(s.min_inputs) +
                          rng() % (max_in - static_cast<size_t>(s.min_inputs) + 1);
      size_t num_outputs = static_cast<size_t>(s.max_outputs == -1 ? 3 : s.max_outputs);
      std::deque<std::vector<int64_t>> dims, data;
      std::deque<loom_value_info_t> values;
      std::vector<const loom_value_info_t*> inputs;
      for (size_t i = 0; i < num_inputs; ++i) {
        if (rng() % 8 == 0) {
          inputs.push_back(nullptr);
          continue;
        }
        loom_value_info_t v{};
        v.struct_size = sizeof v;
        v.name = "x";
        v.dtype = static_cast<loom_dtype_t>(pick({1, 1, 7, 7, 6, 9, 2, 3, 10}));
        v.rank = static_cast<int32_t>(rng() % 8 == 0 ? -1 : rng() % 6);
        dims.emplace_back();
        for (int32_t k = 0; k < std::max(v.rank, 0); ++k)
          dims.back().push_back(pick({-1, 0, 1, 1, 2, 3, 4, 7, huge}));
        v.dims = dims.back().data();
        v.arena_offset = -1;
        // Small integer tensors become constants with random values (shapes, axes, bounds...).
        if ((v.dtype == LOOM_DTYPE_INT64) && v.rank >= 0 && v.rank <= 1 && rng() % 2) {
          dims.back().assign(static_cast<size_t>(v.rank), static_cast<int64_t>(rng() % 5));
          size_t count = v.rank == 0 ? 1 : static_cast<size_t>(dims.back()[0]);
          data.emplace_back();
          for (size_t e = 0; e < count; ++e)
            data.back().push_back(pick({-huge, -3, -1, 0, 1, 2, 3, 5, huge, INT64_MAX, INT64_MIN}));
          v.dims = dims.back().data();
          v.flags = LOOM_VALUE_CONSTANT;
          v.data = data.back().data();
          // Sometimes the data is shorter than the shape claims.
          v.data_size = data.back().size() * sizeof(int64_t) - (rng() % 4 == 0 && count ? 8 : 0);
        }
        values.push_back(v);
        inputs.push_back(&values.back());
      }
      std::deque<loom_attribute_t> attrs;
      std::deque<std::vector<int64_t>> lists;
      for (int a = 0; a < 3; ++a) {
        loom_attribute_t attr{};
        attr.struct_size = sizeof attr;
        if (rng() % 4 == 0) {
          // String attributes, valid and not: padding modes, directions, einsum equations.
          static const std::pair<const char*, const char*> strings[] = {
              {"auto_pad", "SAME_UPPER"},
              {"auto_pad", "VALID"},
              {"auto_pad", "bogus"},
              {"direction", "bidirectional"},
              {"direction", "up"},
              {"reduction", "none"},
              {"equation", "ij,jk->ik"},
              {"equation", "...ii->...i"},
              {"equation", "..i,.->"},
              {"equation", "ab,,c"},
              {"equation", "->z"},
              {"equation", "a...b...c"},
              {"keep_aspect_ratio_policy", "not_smaller"},
              {"mode", "linear"},
              {"to", "FLOAT"}};
          auto [name, value] = strings[rng() % std::size(strings)];
          attr.name = name;
          attr.type = LOOM_ATTR_STRING;
          attr.s = value;
          attr.s_size = std::strlen(value);
        } else if (rng() % 2) {
          attr.name = int_attrs[rng() % std::size(int_attrs)];
          attr.type = LOOM_ATTR_INT;
          attr.i = pick({-huge, -2, -1, 0, 1, 2, 3, 16, huge});
        } else {
          attr.name = ints_attrs[rng() % std::size(ints_attrs)];
          attr.type = LOOM_ATTR_INTS;
          lists.emplace_back();
          for (uint64_t e = rng() % 6; e > 0; --e)
            lists.back().push_back(pick({-huge, -1, 0, 1, 2, 3, huge}));
          attr.ints = lists.back().data();
          attr.count = lists.back().size();
        }
        attrs.push_back(attr);
      }
      std::vector<const loom_attribute_t*> attr_ptrs;
      for (const loom_attribute_t& a : attrs) attr_ptrs.push_back(&a);
      std::vector<int32_t> ids(num_inputs + num_outputs, 0);
      loom_node_t node{};
      node.struct_size = sizeof node;
      node.name = "n";
      node.op_type = s.op_type;
      node.domain = s.domain;
      node.opset = s.since_version;
      node.num_inputs = num_inputs;
      node.inputs = ids.data();
      node.num_outputs = num_outputs;
      node.outputs = ids.data();
      node.num_attributes = attr_ptrs.size();
      node.attributes = attr_ptrs.data();
      std::vector<loom_inferred_t> outputs(num_outputs);
      for (loom_inferred_t& o : outputs) {
        std::memset(&o, 0, sizeof o);
        o.struct_size = sizeof o;
        o.rank = -1;
      }
      ++runs;
      try {
        s.infer(node, inputs, outputs);
      } catch (const loom::sdk::Error& e) {
        ++rejected;
        ASSERT_EQ(e.code(), LOOM_ERROR_INVALID_MODEL) << e.what();
        continue;
      }
      for (const loom_inferred_t& o : outputs) {
        ASSERT_GE(o.rank, -1);
        ASSERT_LE(o.rank, LOOM_MAX_RANK);
        for (int32_t k = 0; k < o.rank; ++k) ASSERT_GE(o.dims[k], -1);
      }
    }
  }
  // Both outcomes occur: the generator is neither all-valid nor all-garbage.
  EXPECT_GT(rejected, 0u);
  EXPECT_LT(rejected, runs);
}

}  // namespace
