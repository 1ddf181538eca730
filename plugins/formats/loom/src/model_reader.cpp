#include "model_reader.hpp"

#include <cstring>
#include <loom/plugin.hpp>
#include <string>
#include <vector>

#include "byte_reader.hpp"
#include "file_layout.hpp"

namespace loom::loomfmt {
namespace {

[[noreturn]] void damaged(const std::string& message) {
  ByteReader::fail(message);
}

struct Sections {
  const uint8_t* graph = nullptr;
  size_t graph_size = 0;
  const uint8_t* weights = nullptr;
  size_t weights_size = 0;
};

Sections read_header(const uint8_t* data, size_t size) {
  if (size < kHeaderSize || std::memcmp(data, kMagic, sizeof kMagic) != 0)
    damaged("the header is missing (not a .loom file?)");
  ByteReader h(data + sizeof kMagic, kHeaderSize - sizeof kMagic);
  uint32_t version = h.u32("binary version");
  uint32_t revision = h.u32("graph-spec revision");
  if (version == 0) damaged("binary version 0");
  if (version > kBinaryVersion)
    sdk::fail(LOOM_ERROR_INCOMPATIBLE,
              "model file version " + std::to_string(version) + " is newer than this runtime's " +
                  std::to_string(kBinaryVersion) + "; upgrade loom-format-loom");
  if (revision > kGraphSpecRevision)
    sdk::fail(LOOM_ERROR_INCOMPATIBLE, "model graph-spec revision " + std::to_string(revision) +
                                           " is newer than this runtime's " +
                                           std::to_string(kGraphSpecRevision) +
                                           "; upgrade loom-format-loom");
  uint64_t file_size = h.u64("file size");
  if (file_size != size)
    damaged("the header says " + std::to_string(file_size) + " bytes but the file has " +
            std::to_string(size) + " (truncated or appended to)");
  uint32_t num_sections = h.u32("section count");
  if (num_sections > kMaxSections || num_sections * kSectionEntrySize > size - kHeaderSize)
    damaged("section count " + std::to_string(num_sections) + " is out of range");

  Sections s;
  bool have_graph = false, have_weights = false;
  ByteReader table(data + kHeaderSize, num_sections * kSectionEntrySize);
  for (uint32_t i = 0; i < num_sections; ++i) {
    uint32_t kind = table.u32("section kind");
    table.u32("section reserved");
    uint64_t offset = table.u64("section offset");
    uint64_t length = table.u64("section size");
    if (offset > size || length > size - offset)
      damaged("section " + std::to_string(i) + " lies outside the file");
    if (kind == kSectionGraph) {
      if (have_graph) damaged("two graph sections");
      have_graph = true;
      s.graph = data + offset;
      s.graph_size = length;
    } else if (kind == kSectionWeights) {
      if (have_weights) damaged("two weights sections");
      if (offset % kWeightAlignment != 0) damaged("the weights section is not 64-byte aligned");
      have_weights = true;
      s.weights = data + offset;
      s.weights_size = length;
    }
    // Unknown kinds are sections of a later minor revision this reader can skip.
  }
  if (!have_graph) damaged("no graph section");
  return s;
}

struct ShapeRecord {
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  int32_t rank = -1;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_param_storage;
  std::vector<const char*> dim_params;  // empty: none
};

struct ConstantRecord {
  const void* data = nullptr;
  size_t size = 0;
  std::vector<std::string> strings;
  std::vector<loom_string_t> string_views;
};

struct ValueRecord {
  std::string name;
  uint32_t flags = 0;
  ShapeRecord shape;
  ConstantRecord constant;
};

class GraphDecoder {
 public:
  GraphDecoder(ByteReader& r, const Sections& s, const loom_builder_api_t& api)
      : r_(r), s_(s), api_(api) {}

  void decode_model(loom_graph_builder_t* b) {
    uint32_t num_opsets = r_.count("opset", 12);
    for (uint32_t i = 0; i < num_opsets; ++i) {
      std::string domain(r_.str("opset domain"));
      int64_t version = r_.i64("opset version");
      sdk::check(api_.set_opset(b, domain.c_str(), version));
    }
    uint32_t num_metadata = r_.count("metadata", 8);
    for (uint32_t i = 0; i < num_metadata; ++i) {
      std::string key(r_.str("metadata key"));
      std::string value(r_.str("metadata value"));
      sdk::check(api_.set_metadata(b, key.c_str(), value.c_str()));
    }
    decode_graph(b, 0);
    if (r_.remaining() != 0)
      damaged(std::to_string(r_.remaining()) + " stray bytes after the graph");
  }

 private:
  void decode_shape(ShapeRecord& s, bool with_params, const char* what) {
    int32_t dtype = r_.i32(what);
    if (dtype < 0 || dtype > LOOM_DTYPE_BFLOAT16)
      damaged(std::string(what) + " has unknown dtype " + std::to_string(dtype));
    s.dtype = static_cast<loom_dtype_t>(dtype);
    s.rank = r_.i32(what);
    if (s.rank < -1 || s.rank > LOOM_MAX_RANK)
      damaged(std::string(what) + " has rank " + std::to_string(s.rank));
    for (int32_t d = 0; d < s.rank; ++d) {
      int64_t dim = r_.i64(what);
      if (dim < -1) damaged(std::string(what) + " has dimension " + std::to_string(dim));
      s.dims.push_back(dim);
    }
    if (!with_params) return;
    uint8_t has_params = r_.u8(what);
    if (has_params > 1) damaged(std::string(what) + " has a bad dim_params flag");
    if (!has_params) return;
    for (int32_t d = 0; d < s.rank; ++d) s.dim_param_storage.emplace_back(r_.str(what));
    for (const std::string& p : s.dim_param_storage)
      s.dim_params.push_back(p.empty() ? nullptr : p.c_str());
  }

  // Element count of a constant of `shape`; unknown extents are not allowed for constants.
  static uint64_t element_count(const ShapeRecord& s, const std::string& what) {
    if (s.rank < 0) damaged(what + " is a constant of unknown rank");
    uint64_t n = 1;
    for (int64_t d : s.dims) {
      if (d < 0) damaged(what + " is a constant with an unknown dimension");
      if (d != 0 && n > UINT64_MAX / static_cast<uint64_t>(d))
        damaged(what + " has too many elements");
      n *= static_cast<uint64_t>(d);
    }
    return n;
  }

  void decode_data(const ShapeRecord& shape, ConstantRecord& c, const std::string& what) {
    uint64_t count = element_count(shape, what);
    if (shape.dtype == LOOM_DTYPE_STRING) {
      uint64_t n = r_.u64("string count");
      if (n != count)
        damaged(what + " holds " + std::to_string(n) + " strings for " + std::to_string(count) +
                " elements");
      if (n > r_.remaining() / 4) damaged(what + " string count exceeds the section's size");
      c.strings.reserve(n);
      for (uint64_t i = 0; i < n; ++i) c.strings.emplace_back(r_.str("string element"));
      for (const std::string& s : c.strings) c.string_views.push_back({s.data(), s.size()});
      c.data = c.string_views.data();
      c.size = c.string_views.size() * sizeof(loom_string_t);
      return;
    }
    size_t element = sdk::dtype_size(shape.dtype);
    if (element == 0) damaged(what + " is a constant of dtype " + sdk::dtype_name(shape.dtype));
    uint64_t offset = r_.u64("weight offset");
    uint64_t size = r_.u64("weight size");
    if (count > UINT64_MAX / element || size != count * element)
      damaged(what + " has " + std::to_string(size) + " bytes of data for its shape");
    if (offset % kWeightAlignment != 0)
      damaged(what + ": weight offset " + std::to_string(offset) + " is not 64-byte aligned");
    if (offset > s_.weights_size || size > s_.weights_size - offset)
      damaged(what + ": weight bytes lie outside the weights section");
    c.data = size ? s_.weights + offset : nullptr;
    c.size = static_cast<size_t>(size);
  }

  void add_constant(loom_graph_builder_t* b, const ValueRecord& v) {
    const int64_t* dims = v.shape.dims.data();
    // The core keeps the file mapped while the model lives (loom_load_args_t::data), so the
    // bytes are borrowed with no release callback.
    if (v.shape.dtype != LOOM_DTYPE_STRING && v.constant.size && api_.add_initializer_borrowed) {
      sdk::check(api_.add_initializer_borrowed(b, v.name.c_str(), v.shape.dtype, v.shape.rank, dims,
                                               v.constant.data, v.constant.size, nullptr, nullptr));
      return;
    }
    sdk::check(api_.add_initializer(b, v.name.c_str(), v.shape.dtype, v.shape.rank, dims,
                                    v.constant.data, v.constant.size));
  }

  static const char* const* params(const ShapeRecord& s) {
    return s.dim_params.empty() ? nullptr : s.dim_params.data();
  }

  void decode_graph(loom_graph_builder_t* b, int depth) {
    if (depth > kMaxGraphDepth)
      damaged("graphs nested more than " + std::to_string(kMaxGraphDepth) + " levels deep");
    r_.str("graph name");
    // Each value takes at least 17 bytes (empty name, flags, dtype, rank, params flag).
    uint32_t num_values = r_.count("value", 17);
    std::vector<ValueRecord> values(num_values);
    for (uint32_t i = 0; i < num_values; ++i) {
      ValueRecord& v = values[i];
      v.name = r_.str("value name");
      if (v.name.empty()) damaged("value #" + std::to_string(i) + " has no name");
      v.flags = r_.u32("value flags");
      decode_shape(v.shape, true, "value");
      if (v.flags & kValueConstant) decode_data(v.shape, v.constant, "constant '" + v.name + "'");
    }
    auto value_at = [&](int32_t id, const char* what) -> const ValueRecord& {
      if (id < 0 || static_cast<uint32_t>(id) >= num_values)
        damaged(std::string(what) + " refers to value #" + std::to_string(id) + " of " +
                std::to_string(num_values));
      return values[id];
    };

    uint32_t num_inputs = r_.count("graph input", 4);
    std::vector<bool> declared(num_values, false);
    for (uint32_t i = 0; i < num_inputs; ++i) {
      int32_t id = r_.i32("graph input");
      const ValueRecord& v = value_at(id, "a graph input");
      declared[id] = true;
      sdk::check(api_.add_input(b, v.name.c_str(), v.shape.dtype, v.shape.rank, v.shape.dims.data(),
                                params(v.shape)));
      declare_container(b, v);
    }
    for (const ValueRecord& v : values)
      if (v.flags & kValueConstant) add_constant(b, v);

    uint32_t num_outputs = r_.count("graph output", 4);
    std::vector<int32_t> outputs;
    for (uint32_t i = 0; i < num_outputs; ++i) {
      outputs.push_back(r_.i32("graph output"));
      value_at(outputs.back(), "a graph output");
    }
    // Each node takes at least 24 bytes (three empty strings and three counts).
    uint32_t num_nodes = r_.count("node", 24);
    for (uint32_t k = 0; k < num_nodes; ++k) {
      std::string name(r_.str("node name"));
      std::string op_type(r_.str("node op_type"));
      std::string domain(r_.str("node domain"));
      std::vector<const char*> inputs, outputs_of_node;
      uint32_t ni = r_.count("node input", 4);
      for (uint32_t i = 0; i < ni; ++i) {
        int32_t id = r_.i32("node input");
        inputs.push_back(id == -1 ? "" : value_at(id, "a node input").name.c_str());
      }
      uint32_t no = r_.count("node output", 4);
      for (uint32_t i = 0; i < no; ++i) {
        int32_t id = r_.i32("node output");
        outputs_of_node.push_back(id == -1 ? "" : value_at(id, "a node output").name.c_str());
      }
      loom_node_builder_t* nb = nullptr;
      sdk::check(api_.add_node(b, name.c_str(), op_type.c_str(), domain.c_str(), inputs.size(),
                               inputs.data(), outputs_of_node.size(), outputs_of_node.data(), &nb));
      if (!nb) sdk::fail(LOOM_ERROR_INTERNAL, "the builder returned no node");
      uint32_t na = r_.count("attribute", 5);
      for (uint32_t i = 0; i < na; ++i) decode_attribute(nb, depth);
    }
    for (int32_t id : outputs) {
      const ValueRecord& v = values[id];
      sdk::check(api_.add_output(b, v.name.c_str(), v.shape.dtype, v.shape.rank,
                                 v.shape.dims.data(), params(v.shape)));
      declare_container(b, v);
    }
    // What the source knew about intermediate values, so shape inference starts from it.
    for (uint32_t i = 0; i < num_values; ++i) {
      const ValueRecord& v = values[i];
      if (declared[i] || (v.flags & (kValueConstant | kValueOuterScope | kValueOutput))) continue;
      if (v.shape.dtype == LOOM_DTYPE_UNDEFINED && v.shape.rank < 0) continue;
      sdk::check(api_.add_value_info(b, v.name.c_str(), v.shape.dtype, v.shape.rank,
                                     v.shape.dims.data(), params(v.shape)));
      declare_container(b, v);
    }
  }

  // A sequence or optional value (revision 2) is declared as such after its element type.
  void declare_container(loom_graph_builder_t* b, const ValueRecord& v) {
    uint32_t container = v.flags & (kValueSequence | kValueOptional);
    if (!container) return;
    if (!LOOM_HAS_MEMBER(&api_, loom_builder_api_t, set_value_container) ||
        !api_.set_value_container)
      sdk::fail(LOOM_ERROR_UNSUPPORTED,
                "value '" + v.name +
                    "' is a sequence or optional, which this Loom core cannot hold (it predates "
                    "plugin ABI 1.2); upgrade libloom");
    sdk::check(api_.set_value_container(b, v.name.c_str(), container));
  }

  void decode_attribute(loom_node_builder_t* nb, int depth) {
    std::string name(r_.str("attribute name"));
    uint8_t type = r_.u8("attribute type");
    switch (type) {
      case LOOM_ATTR_INT:
        sdk::check(api_.set_attr_int(nb, name.c_str(), r_.i64("int attribute")));
        return;
      case LOOM_ATTR_FLOAT:
        sdk::check(api_.set_attr_float(nb, name.c_str(), r_.f32("float attribute")));
        return;
      case LOOM_ATTR_STRING: {
        std::string_view s = r_.str("string attribute");
        sdk::check(api_.set_attr_string(nb, name.c_str(), s.data(), s.size()));
        return;
      }
      case LOOM_ATTR_INTS: {
        uint32_t n = r_.count("ints attribute", 8);
        std::vector<int64_t> v(n);
        for (int64_t& x : v) x = r_.i64("ints attribute");
        sdk::check(api_.set_attr_ints(nb, name.c_str(), v.data(), v.size()));
        return;
      }
      case LOOM_ATTR_FLOATS: {
        uint32_t n = r_.count("floats attribute", 4);
        std::vector<float> v(n);
        for (float& x : v) x = r_.f32("floats attribute");
        sdk::check(api_.set_attr_floats(nb, name.c_str(), v.data(), v.size()));
        return;
      }
      case LOOM_ATTR_STRINGS: {
        uint32_t n = r_.count("strings attribute", 4);
        std::vector<loom_string_t> v(n);
        for (loom_string_t& x : v) {
          std::string_view s = r_.str("strings attribute");
          x = {s.data(), s.size()};
        }
        sdk::check(api_.set_attr_strings(nb, name.c_str(), v.data(), v.size()));
        return;
      }
      case LOOM_ATTR_TENSOR: {
        ShapeRecord shape;
        decode_shape(shape, false, "tensor attribute");
        ConstantRecord c;
        decode_data(shape, c, "tensor attribute '" + name + "'");
        sdk::check(api_.set_attr_tensor(nb, name.c_str(), shape.dtype, shape.rank,
                                        shape.dims.data(), c.data, c.size));
        return;
      }
      case LOOM_ATTR_GRAPH: {
        loom_graph_builder_t* sub = nullptr;
        sdk::check(api_.add_attr_graph(nb, name.c_str(), &sub));
        if (!sub) sdk::fail(LOOM_ERROR_INTERNAL, "the builder returned no graph");
        decode_graph(sub, depth + 1);
        return;
      }
      default:
        damaged("attribute '" + name + "' has unknown type " + std::to_string(type));
    }
  }

  ByteReader& r_;
  const Sections& s_;
  const loom_builder_api_t& api_;
};

void check_builder_api(const loom_builder_api_t& api) {
  if (!LOOM_HAS_MEMBER(&api, loom_builder_api_t, add_attr_graph) || !api.set_opset ||
      !api.set_metadata || !api.add_input || !api.add_output || !api.add_value_info ||
      !api.add_initializer || !api.add_node || !api.set_attr_int || !api.set_attr_float ||
      !api.set_attr_string || !api.set_attr_ints || !api.set_attr_floats || !api.set_attr_strings ||
      !api.set_attr_tensor || !api.add_attr_graph)
    sdk::fail(LOOM_ERROR_INCOMPATIBLE, "the host's graph builder lacks a function of ABI 1.0");
}

}  // namespace

int32_t probe(const uint8_t* head, size_t head_size) {
  return head && head_size >= sizeof kMagic && std::memcmp(head, kMagic, sizeof kMagic) == 0 ? 100
                                                                                             : 0;
}

void load_model(const loom_load_args_t& args, const loom_builder_api_t& api,
                loom_graph_builder_t* builder) {
  check_builder_api(api);
  if (!args.data) sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "the core passed no file data");
  Sections sections = read_header(args.data, args.size);
  ByteReader r(sections.graph, sections.graph_size);
  GraphDecoder(r, sections, api).decode_model(builder);
}

}  // namespace loom::loomfmt
