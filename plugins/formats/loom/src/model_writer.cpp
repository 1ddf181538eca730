#include "model_writer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <loom/plugin.hpp>
#include <string>
#include <vector>

#include "byte_writer.hpp"
#include "file_layout.hpp"

namespace loom::loomfmt {
namespace {

// Constant bytes queued for the weights section, at `offset` from the section start.
struct Blob {
  const void* data;
  size_t size;
  uint64_t offset;
};

class GraphEncoder {
 public:
  void encode_model(const loom_save_args_t& args) {
    w_.u32(static_cast<uint32_t>(args.num_opsets));
    for (size_t i = 0; i < args.num_opsets; ++i) {
      w_.str(args.opset_domains[i] ? args.opset_domains[i] : "");
      w_.i64(args.opset_versions[i]);
    }
    w_.u32(static_cast<uint32_t>(args.num_metadata));
    for (size_t i = 0; i < args.num_metadata; ++i) {
      w_.str(args.metadata_keys[i] ? args.metadata_keys[i] : "");
      w_.str(args.metadata_values[i] ? args.metadata_values[i] : "");
    }
    std::vector<int32_t> declared(args.declared_inputs,
                                  args.declared_inputs + args.num_declared_inputs);
    encode_graph(*args.graph, declared, 0);
  }

  const ByteWriter& bytes() const { return w_; }
  const std::vector<Blob>& blobs() const { return blobs_; }
  uint64_t weights_size() const { return weights_size_; }
  // The graph-spec revision the encoded graph needs (see file_layout.hpp).
  uint32_t revision() const { return uses_containers_ ? kFirstContainerRevision : 1; }

 private:
  void encode_graph(const loom_graph_t& g, const std::vector<int32_t>& declared_inputs, int depth) {
    if (depth > kMaxGraphDepth)
      sdk::fail(LOOM_ERROR_UNSUPPORTED,
                "graphs nested more than " + std::to_string(kMaxGraphDepth) + " levels deep");
    w_.str(g.name ? g.name : "");
    w_.u32(static_cast<uint32_t>(g.num_values));
    for (size_t i = 0; i < g.num_values; ++i) encode_value(*g.values[i]);
    w_.u32(static_cast<uint32_t>(declared_inputs.size()));
    for (int32_t id : declared_inputs) w_.i32(id);
    w_.u32(static_cast<uint32_t>(g.num_outputs));
    for (size_t i = 0; i < g.num_outputs; ++i) w_.i32(g.outputs[i]);
    w_.u32(static_cast<uint32_t>(g.num_nodes));
    for (size_t k = 0; k < g.num_nodes; ++k) encode_node(*g.nodes[k], depth);
  }

  void encode_shape(loom_dtype_t dtype, int32_t rank, const int64_t* dims) {
    w_.i32(static_cast<int32_t>(dtype));
    w_.i32(rank);
    for (int32_t d = 0; d < rank; ++d) w_.i64(dims[d]);
  }
  // A value's shape: the extents and their symbolic names.
  void encode_shape(loom_dtype_t dtype, int32_t rank, const int64_t* dims,
                    const char* const* dim_params) {
    encode_shape(dtype, rank, dims);
    w_.u8(dim_params ? 1 : 0);
    if (dim_params)
      for (int32_t d = 0; d < rank; ++d) w_.str(dim_params[d] ? dim_params[d] : "");
  }

  // A constant's payload: strings inline, everything else as a reference into the weights.
  void encode_data(const loom_value_info_t& v) {
    if (v.dtype == LOOM_DTYPE_STRING) {
      size_t n = v.data_size / sizeof(loom_string_t);
      const auto* s = static_cast<const loom_string_t*>(v.data);
      w_.u64(n);
      for (size_t i = 0; i < n; ++i)
        w_.str(std::string_view(s[i].data ? s[i].data : "", s[i].size));
      return;
    }
    uint64_t offset = align_up(weights_size_, kWeightAlignment);
    if (v.data_size) blobs_.push_back({v.data, v.data_size, offset});
    weights_size_ = offset + v.data_size;
    w_.u64(offset);
    w_.u64(v.data_size);
  }

  void encode_value(const loom_value_info_t& v) {
    w_.str(v.name ? v.name : "");
    uint32_t flags = v.flags & (kValueInput | kValueOutput | kValueConstant | kValueOuterScope |
                                kValueSequence | kValueOptional);
    if (flags & (kValueSequence | kValueOptional)) uses_containers_ = true;
    w_.u32(flags);
    encode_shape(v.dtype, v.rank, v.dims, v.dim_params);
    if (flags & kValueConstant) encode_data(v);
  }

  void encode_node(const loom_node_t& n, int depth) {
    w_.str(n.name ? n.name : "");
    w_.str(n.op_type);
    w_.str(n.domain ? n.domain : "");
    w_.u32(static_cast<uint32_t>(n.num_inputs));
    for (size_t i = 0; i < n.num_inputs; ++i) w_.i32(n.inputs[i]);
    w_.u32(static_cast<uint32_t>(n.num_outputs));
    for (size_t i = 0; i < n.num_outputs; ++i) w_.i32(n.outputs[i]);
    w_.u32(static_cast<uint32_t>(n.num_attributes));
    for (size_t i = 0; i < n.num_attributes; ++i) encode_attribute(*n.attributes[i], depth);
  }

  void encode_attribute(const loom_attribute_t& a, int depth) {
    w_.str(a.name);
    w_.u8(static_cast<uint8_t>(a.type));
    switch (a.type) {
      case LOOM_ATTR_INT:
        w_.i64(a.i);
        break;
      case LOOM_ATTR_FLOAT:
        w_.f32(a.f);
        break;
      case LOOM_ATTR_STRING:
        w_.str(std::string_view(a.s ? a.s : "", a.s_size));
        break;
      case LOOM_ATTR_INTS:
        w_.u32(static_cast<uint32_t>(a.count));
        for (size_t i = 0; i < a.count; ++i) w_.i64(a.ints[i]);
        break;
      case LOOM_ATTR_FLOATS:
        w_.u32(static_cast<uint32_t>(a.count));
        for (size_t i = 0; i < a.count; ++i) w_.f32(a.floats[i]);
        break;
      case LOOM_ATTR_STRINGS:
        w_.u32(static_cast<uint32_t>(a.count));
        for (size_t i = 0; i < a.count; ++i)
          w_.str(std::string_view(a.strings[i].data ? a.strings[i].data : "", a.strings[i].size));
        break;
      case LOOM_ATTR_TENSOR:
        if (!a.tensor)
          sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                    std::string("tensor attribute '") + a.name + "' has no value");
        encode_shape(a.tensor->dtype, a.tensor->rank, a.tensor->dims);
        encode_data(*a.tensor);
        break;
      case LOOM_ATTR_GRAPH: {
        if (!a.graph)
          sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                    std::string("graph attribute '") + a.name + "' has no graph");
        std::vector<int32_t> inputs(a.graph->inputs, a.graph->inputs + a.graph->num_inputs);
        encode_graph(*a.graph, inputs, depth + 1);
        break;
      }
      default:
        sdk::fail(LOOM_ERROR_UNSUPPORTED, std::string("attribute '") + a.name + "' has type " +
                                              std::to_string(a.type) +
                                              ", which .loom cannot store");
    }
  }

  ByteWriter w_;
  std::vector<Blob> blobs_;
  uint64_t weights_size_ = 0;
  bool uses_containers_ = false;
};

class OutputFile {
 public:
  explicit OutputFile(const std::string& path) : path_(path) {
    f_ = std::fopen(path.c_str(), "wb");
    if (!f_)
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                "cannot create '" + path + "': " + std::strerror(errno));
  }
  ~OutputFile() {
    if (f_) std::fclose(f_);
  }
  void write(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n)
      sdk::fail(LOOM_ERROR_RUNTIME, "cannot write '" + path_ + "': " + std::strerror(errno));
  }
  void pad_to(uint64_t offset, uint64_t& position) {
    static const uint8_t kZeros[kWeightAlignment] = {};
    while (position < offset) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(offset - position, sizeof kZeros));
      write(kZeros, n);
      position += n;
    }
  }
  void close() {
    int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0)
      sdk::fail(LOOM_ERROR_RUNTIME, "cannot write '" + path_ + "': " + std::strerror(errno));
  }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
};

}  // namespace

void save_model(const loom_save_args_t& args) {
  if (!args.path || !*args.path || !args.graph)
    sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "loom format save: path and graph are required");
  GraphEncoder encoder;
  encoder.encode_model(args);
  const std::vector<uint8_t>& graph = encoder.bytes().bytes();

  const uint64_t graph_offset = kHeaderSize + 2 * kSectionEntrySize;
  const uint64_t weights_offset = align_up(graph_offset + graph.size(), kWeightAlignment);
  const uint64_t file_size = weights_offset + encoder.weights_size();

  ByteWriter head;
  head.put(kMagic, sizeof kMagic);
  head.u32(kBinaryVersion);
  head.u32(encoder.revision());
  head.u64(file_size);
  head.u32(2);  // sections
  while (head.size() < kHeaderSize) head.u8(0);
  head.u32(kSectionGraph);
  head.u32(0);
  head.u64(graph_offset);
  head.u64(graph.size());
  head.u32(kSectionWeights);
  head.u32(0);
  head.u64(weights_offset);
  head.u64(encoder.weights_size());

  // Written next to the target and renamed over it, so a failed save never leaves half a model
  // under the final name.
  std::string tmp = std::string(args.path) + ".partial";
  try {
    OutputFile out(tmp);
    uint64_t position = 0;
    out.write(head.bytes().data(), head.size());
    out.write(graph.data(), graph.size());
    position = graph_offset + graph.size();
    for (const Blob& b : encoder.blobs()) {
      out.pad_to(weights_offset + b.offset, position);
      out.write(b.data, b.size);
      position += b.size;
    }
    out.pad_to(file_size, position);
    out.close();
    std::error_code ec;
    std::filesystem::rename(tmp, args.path, ec);
    if (ec)
      sdk::fail(LOOM_ERROR_RUNTIME,
                std::string("cannot write '") + args.path + "': " + ec.message());
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
}

}  // namespace loom::loomfmt
