#include "input_feeds.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <loom_apps/api.hpp>
#include <loom_apps/dtype.hpp>
#include <loom_apps/tensor_proto.hpp>
#include <map>
#include <random>

#include "app_error.hpp"

namespace loom::infer_run {
namespace {

using loom::apps::HostTensor;

std::string input_names(const std::vector<loom_io_info_t>& inputs) {
  std::string names;
  for (const auto& in : inputs) names += (names.empty() ? "" : ", ") + std::string(in.name);
  return names.empty() ? "(none)" : names;
}

const loom_io_info_t& find_input(const std::vector<loom_io_info_t>& inputs, const std::string& name,
                                 const char* option) {
  for (const auto& in : inputs)
    if (name == in.name) return in;
  throw AppError(kExitUsage, fmt::format("{} names '{}', which is not an input of the model "
                                         "(inputs: {})",
                                         option, name, input_names(inputs)));
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::vector<std::string> parts;
  for (int64_t d : dims) parts.push_back(d < 0 ? "?" : std::to_string(d));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

// Checks `dims` against the declared shape (rank, static extents). `what` names the source.
void check_against_declared(const loom_io_info_t& info, const std::vector<int64_t>& dims,
                            const std::string& what) {
  if (info.rank < 0) return;
  std::vector<int64_t> declared = loom::apps::io_dims(info);
  bool ok = declared.size() == dims.size();
  for (size_t i = 0; ok && i < dims.size(); ++i) ok = declared[i] < 0 || declared[i] == dims[i];
  if (!ok)
    throw AppError(kExitUsage,
                   fmt::format("input '{}': {} has shape {}, the model declares {}", info.name,
                               what, shape_text(dims), shape_text(declared)));
}

std::vector<int64_t> generated_shape(const loom_io_info_t& info, const Options& options) {
  for (const auto& [name, dims] : options.shapes) {
    if (name != info.name) continue;
    check_against_declared(info, dims, "--shape");
    return dims;
  }
  if (info.rank < 0)
    throw AppError(kExitUsage, fmt::format("input '{}' has an unknown rank: give its shape with "
                                           "--shape {}=DIMS (e.g. 1x3x224x224)",
                                           info.name, info.name));
  std::vector<int64_t> dims = loom::apps::io_dims(info);
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] >= 0) continue;
    const char* param = info.dim_params[i];
    throw AppError(kExitUsage,
                   fmt::format("input '{}' has dynamic dimension {}{} in {}: give its shape with "
                               "--shape {}=DIMS",
                               info.name, i, param && *param ? fmt::format(" ('{}')", param) : "",
                               shape_text(dims), info.name));
  }
  return dims;
}

}  // namespace

void fill_random(HostTensor& t, uint64_t rng_seed) {
  std::mt19937_64 rng(rng_seed);
  // Hand-rolled mappings instead of <random> distributions: the values are then the same with
  // every standard library, so a seed reproduces a run anywhere.
  auto unit = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };  // [0, 1)
  auto small_int = [&] { return static_cast<int64_t>(rng() % 10); };
  size_t n = t.element_count();
  for (size_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case LOOM_DTYPE_FLOAT32:
        t.as<float>()[i] = static_cast<float>(unit());
        break;
      case LOOM_DTYPE_FLOAT64:
        t.as<double>()[i] = unit();
        break;
      case LOOM_DTYPE_FLOAT16:
        t.as<uint16_t>()[i] = loom::apps::float_to_half(static_cast<float>(unit()));
        break;
      case LOOM_DTYPE_BFLOAT16:
        t.as<uint16_t>()[i] = loom::apps::float_to_bfloat16(static_cast<float>(unit()));
        break;
      case LOOM_DTYPE_COMPLEX64:
        t.as<float>()[2 * i] = static_cast<float>(unit());
        t.as<float>()[2 * i + 1] = static_cast<float>(unit());
        break;
      case LOOM_DTYPE_COMPLEX128:
        t.as<double>()[2 * i] = unit();
        t.as<double>()[2 * i + 1] = unit();
        break;
      case LOOM_DTYPE_INT8:
        t.as<int8_t>()[i] = static_cast<int8_t>(small_int());
        break;
      case LOOM_DTYPE_INT16:
        t.as<int16_t>()[i] = static_cast<int16_t>(small_int());
        break;
      case LOOM_DTYPE_INT32:
        t.as<int32_t>()[i] = static_cast<int32_t>(small_int());
        break;
      case LOOM_DTYPE_INT64:
        t.as<int64_t>()[i] = small_int();
        break;
      case LOOM_DTYPE_UINT8:
        t.as<uint8_t>()[i] = static_cast<uint8_t>(small_int());
        break;
      case LOOM_DTYPE_UINT16:
        t.as<uint16_t>()[i] = static_cast<uint16_t>(small_int());
        break;
      case LOOM_DTYPE_UINT32:
        t.as<uint32_t>()[i] = static_cast<uint32_t>(small_int());
        break;
      case LOOM_DTYPE_UINT64:
        t.as<uint64_t>()[i] = static_cast<uint64_t>(small_int());
        break;
      case LOOM_DTYPE_BOOL:
        t.as<uint8_t>()[i] = static_cast<uint8_t>(rng() & 1);
        break;
      case LOOM_DTYPE_STRING: {
        std::string s(1 + rng() % 8, 'a');
        for (char& c : s) c = static_cast<char>('a' + rng() % 26);
        t.strings[i] = std::move(s);
        break;
      }
      // ABI 1.6's narrow types, one element per byte: encodings of small values, [0, 1) for
      // the floats (every byte below the encoding of 1.0 is a finite value in [0, 1)).
      case LOOM_DTYPE_FLOAT8E4M3FN:
        t.as<uint8_t>()[i] = static_cast<uint8_t>(rng() % 0x38);
        break;
      case LOOM_DTYPE_FLOAT8E5M2:
        t.as<uint8_t>()[i] = static_cast<uint8_t>(rng() % 0x3C);
        break;
      case LOOM_DTYPE_FLOAT8E4M3FNUZ:
      case LOOM_DTYPE_FLOAT8E5M2FNUZ:
        t.as<uint8_t>()[i] = static_cast<uint8_t>(rng() % 0x40);
        break;
      case LOOM_DTYPE_FLOAT8E8M0:  // powers of two 2^-7 .. 2^0
        t.as<uint8_t>()[i] = static_cast<uint8_t>(120 + rng() % 8);
        break;
      case LOOM_DTYPE_FLOAT4E2M1:  // 0, 0.5
        t.as<uint8_t>()[i] = static_cast<uint8_t>(rng() % 2);
        break;
      case LOOM_DTYPE_FLOAT6E2M3:
        t.as<uint8_t>()[i] = static_cast<uint8_t>(rng() % 0x08);
        break;
      case LOOM_DTYPE_FLOAT6E3M2:
        t.as<uint8_t>()[i] = static_cast<uint8_t>(rng() % 0x0C);
        break;
      case LOOM_DTYPE_INT4:
      case LOOM_DTYPE_UINT4:
        t.as<uint8_t>()[i] = static_cast<uint8_t>(rng() % 8);
        break;
      case LOOM_DTYPE_INT2:
      case LOOM_DTYPE_UINT2:
        t.as<uint8_t>()[i] = static_cast<uint8_t>(rng() % 2);
        break;
      case LOOM_DTYPE_UNDEFINED:
        break;
    }
  }
}

std::vector<InputFeed> prepare_inputs(const Options& options,
                                      const std::vector<loom_io_info_t>& model_inputs) {
  std::map<std::string, std::string> files;
  for (const auto& [name, file] : options.inputs) {
    find_input(model_inputs, name, "--input");
    if (!files.emplace(name, file).second)
      throw AppError(kExitUsage, fmt::format("--input '{}' is given twice", name));
  }
  for (const auto& [name, dims] : options.shapes) find_input(model_inputs, name, "--shape");
  // Some inputs from files and the others generated is more often a forgotten --input than a
  // wish: generate them only when asked to. No --input at all generates every input.
  auto refuse_missing = [&] {
    std::vector<std::string> missing;
    for (const auto& info : model_inputs)
      if (!files.count(info.name)) missing.push_back(fmt::format("'{}'", info.name));
    throw AppError(
        kExitUsage,
        fmt::format("input{} {} not given with --input: give {} with --input "
                    "NAME=FILE, or pass --random-inputs to generate {}",
                    missing.size() == 1 ? "" : "s", fmt::join(missing, ", "),
                    missing.size() == 1 ? "it" : "them", missing.size() == 1 ? "it" : "them"));
  };

  std::vector<InputFeed> feeds;
  for (size_t index = 0; index < model_inputs.size(); ++index) {
    const loom_io_info_t& info = model_inputs[index];
    InputFeed feed;
    feed.name = info.name;
    auto file = files.find(info.name);
    if (file != files.end()) {
      feed.source = file->second;
      try {
        feed.tensor = loom::apps::read_tensor_file(file->second, info.dtype).tensor;
      } catch (const loom::apps::TensorIoError& e) {
        // A file without the .npy magic is parsed as a TensorProto: when that fails too, say
        // it is neither, rather than only that it is no TensorProto (it may be a bad .npy).
        std::string message = e.what();
        if (message.find("not a valid ONNX TensorProto") != std::string::npos)
          message = fmt::format(
              "{} is neither a .npy file (no \\x93NUMPY magic) nor a valid "
              "ONNX TensorProto",
              file->second);
        throw AppError(kExitUsage, fmt::format("input '{}': {}", info.name, message));
      }
      if (info.dtype != LOOM_DTYPE_UNDEFINED && feed.tensor.dtype != info.dtype)
        throw AppError(kExitUsage,
                       fmt::format("input '{}': {} holds {}, the model expects {}", info.name,
                                   file->second, loom::apps::dtype_name(feed.tensor.dtype),
                                   loom::apps::dtype_name(info.dtype)));
      check_against_declared(info, feed.tensor.dims, file->second);
      for (const auto& [name, dims] : options.shapes)
        if (name == info.name && dims != feed.tensor.dims)
          throw AppError(kExitUsage,
                         fmt::format("input '{}': --shape {} contradicts {} of shape {}", name,
                                     shape_text(dims), file->second, shape_text(feed.tensor.dims)));
    } else {
      if (info.dtype == LOOM_DTYPE_UNDEFINED)
        throw AppError(kExitUsage, fmt::format("input '{}' has no declared type: give it with "
                                               "--input {}=FILE",
                                               info.name, info.name));
      if (!files.empty() && !options.random_inputs) refuse_missing();
      feed.source = "random";
      try {
        std::vector<int64_t> dims = generated_shape(info, options);
        // Refuse absurd --shape values before allocating: 4 GiB of generated data at most.
        size_t limit = (size_t{4} << 30) / std::max<size_t>(loom::apps::dtype_size(info.dtype), 8);
        loom::apps::checked_element_count(dims, "generated input", limit);
        feed.tensor = loom::apps::HostTensor::zeros(info.dtype, std::move(dims));
      } catch (const loom::apps::TensorIoError& e) {
        throw AppError(kExitUsage, fmt::format("input '{}': {}", info.name, e.what()));
      }
      // Each input gets its own stream, so adding an input does not change the others.
      fill_random(feed.tensor, options.seed * 0x9E3779B97F4A7C15ull + index);
    }
    feeds.push_back(std::move(feed));
  }
  return feeds;
}

}  // namespace loom::infer_run
