#include "ncnn_loader.hpp"

#include <filesystem>
#include <fstream>
#include <loom/plugin.hpp>
#include <map>
#include <set>
#include <vector>

#include "conversion.hpp"
#include "param_parser.hpp"

namespace loom::ncnnfmt {
namespace {

const std::map<std::string, Converter>& converters() {
  static const std::map<std::string, Converter> table = {
      {"Input", convert_input},
      {"Convolution", convert_convolution},
      {"ConvolutionDepthWise", convert_convolution},
      {"Deconvolution", convert_deconvolution},
      {"DeconvolutionDepthWise", convert_deconvolution},
      {"Pooling", convert_pooling},
      {"InnerProduct", convert_inner_product},
      {"ReLU", convert_unary_activation},
      {"Clip", convert_unary_activation},
      {"Sigmoid", convert_unary_activation},
      {"Swish", convert_unary_activation},
      {"HardSwish", convert_unary_activation},
      {"HardSigmoid", convert_unary_activation},
      {"TanH", convert_unary_activation},
      {"Mish", convert_unary_activation},
      {"BinaryOp", convert_binary_op},
      {"Eltwise", convert_eltwise},
      {"Concat", convert_concat},
      {"Split", convert_split},
      {"Slice", convert_slice},
      {"Crop", convert_crop},
      {"Reshape", convert_reshape},
      {"Flatten", convert_flatten},
      {"Permute", convert_permute},
      {"Padding", convert_padding},
      {"BatchNorm", convert_batch_norm},
      {"Scale", convert_scale},
      {"Softmax", convert_softmax},
      {"Interp", convert_interp},
      {"MemoryData", convert_memory_data},
      {"Dropout", convert_dropout},
      {"Noop", convert_split},
  };
  return table;
}

std::string known_types() {
  std::string list;
  for (const auto& [name, fn] : converters()) list += (list.empty() ? "" : ", ") + name;
  return list;
}

// Checks the blob graph before converting: every blob produced once, read only after it is
// produced (this also rules out cycles), no more blobs than the header declared.
void check_structure(const ParsedParam& param) {
  std::set<std::string> produced, layer_names;
  for (const Layer& layer : param.layers) {
    if (!param.binary && !layer_names.insert(layer.name).second)
      sdk::fail(LOOM_ERROR_INVALID_MODEL, "ncnn param: two layers are named '" + layer.name + "'");
    for (const std::string& b : layer.bottoms)
      if (!produced.count(b))
        sdk::fail(LOOM_ERROR_INVALID_MODEL,
                  "ncnn param: layer '" + layer.name + "' reads blob '" + b +
                      "', which no earlier layer produces (missing blob, or a cycle)");
    for (const std::string& t : layer.tops)
      if (!produced.insert(t).second)
        sdk::fail(LOOM_ERROR_INVALID_MODEL, "ncnn param: blob '" + t +
                                                "' is produced twice (second time by layer '" +
                                                layer.name + "')");
  }
}

}  // namespace

std::string weights_path_for(const std::string& param_path) {
  std::string stem = param_path;
  auto strip = [&](const std::string& suffix) {
    if (stem.size() > suffix.size() &&
        stem.compare(stem.size() - suffix.size(), suffix.size(), suffix) == 0) {
      stem.resize(stem.size() - suffix.size());
      return true;
    }
    return false;
  };
  if (!strip(".param.bin")) strip(".param");
  return stem + ".bin";
}

void load_model(const loom_load_args_t& args, const loom_builder_api_t& api,
                loom_graph_builder_t* builder, const uint8_t* weights, size_t weights_size,
                const std::string& weights_name, bool weights_missing) {
  if (!args.data || args.size == 0)
    sdk::fail(LOOM_ERROR_INVALID_MODEL, "ncnn param: the file is empty");
  ParsedParam param = is_binary_param(args.data, args.size)
                          ? parse_binary_param(args.data, args.size)
                          : parse_text_param(args.data, args.size);
  check_structure(param);
  sdk::check(api.set_opset(builder, "", 13));
  sdk::check(api.set_metadata(builder, "producer_name", "ncnn"));

  WeightReader reader(weights, weights_size, weights_name, weights_missing);
  Context ctx(api, builder, reader);
  std::set<std::string> consumed;
  for (const Layer& layer : param.layers) {
    auto it = converters().find(layer.type);
    if (it == converters().end())
      sdk::fail(LOOM_ERROR_UNSUPPORTED,
                "ncnn layer '" + layer.name + "' has type " + layer.type +
                    ", which the ncnn plugin does not convert (supported: " + known_types() + ")");
    it->second(ctx, layer);
    consumed.insert(layer.bottoms.begin(), layer.bottoms.end());
  }
  // ncnn declares no outputs: they are the blobs no layer reads.
  bool any_output = false;
  for (const Layer& layer : param.layers) {
    if (layer.type == "Input") continue;
    for (const std::string& top : layer.tops)
      if (!consumed.count(top)) {
        ctx.add_output(top);
        any_output = true;
      }
  }
  if (!any_output)
    sdk::fail(LOOM_ERROR_INVALID_MODEL, "ncnn param: the network has no output blob");
  if (!weights_missing && reader.bytes_left() != 0)
    sdk::log(LOOM_LOG_WARNING, "ncnn",
             weights_name + " has " + std::to_string(reader.bytes_left()) +
                 " bytes no layer reads (does it belong to this .param?)");
}

void load_model_from_files(const loom_load_args_t& args, const loom_builder_api_t& api,
                           loom_graph_builder_t* builder) {
  // ncnn keeps the weights in a second file; bytes given from memory (ABI 1.5) are the .param
  // alone. A network without weights loads; the first layer that needs some fails saying why.
  if (LOOM_HAS_MEMBER(&args, loom_load_args_t, flags) && (args.flags & LOOM_LOAD_FROM_MEMORY)) {
    load_model(args, api, builder, nullptr, 0, "", true);
    return;
  }
  std::string weights_path = weights_path_for(args.path ? args.path : "");
  std::error_code ec;
  bool missing = !std::filesystem::is_regular_file(weights_path, ec);
  std::vector<uint8_t> bytes;
  if (!missing) {
    std::ifstream in(weights_path, std::ios::binary);
    in.seekg(0, std::ios::end);
    std::streamoff size = in.tellg();
    in.seekg(0);
    if (!in || size < 0)
      sdk::fail(LOOM_ERROR_NOT_FOUND, "ncnn weights: cannot read " + weights_path);
    bytes.resize(static_cast<size_t>(size));
    in.read(reinterpret_cast<char*>(bytes.data()), size);
    if (!in) sdk::fail(LOOM_ERROR_NOT_FOUND, "ncnn weights: cannot read " + weights_path);
  }
  load_model(args, api, builder, bytes.data(), bytes.size(), weights_path, missing);
}

}  // namespace loom::ncnnfmt
