// libFuzzer target: arbitrary bytes through probe and load of the ncnn format, against the
// recording fake builder of the ONNX tests. The input is split at the first "\n#BIN\n" into a
// param (text or binary) and its weights, so both files are fuzzed. Any crash, sanitizer
// report, leak or uncaught exception is a bug.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <loom/plugin.hpp>
#include <string_view>

#include "fake_builder.hpp"
#include "ncnn_loader.hpp"
#include "param_parser.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  loom::sdk::set_host(&loom::onnx::testing::fake_host());
  loom::ncnnfmt::probe_param(data, size < 4096 ? size : 4096);
  std::string_view all(reinterpret_cast<const char*>(data), size);
  size_t split = all.find("\n#BIN\n");
  size_t param_size = split == std::string_view::npos ? size : split;
  const uint8_t* weights = split == std::string_view::npos ? nullptr : data + split + 6;
  size_t weights_size = split == std::string_view::npos ? 0 : size - split - 6;
  loom::onnx::testing::FakeBuilder builder;
  loom_load_args_t args{};
  args.struct_size = sizeof args;
  args.path = "fuzz.param";
  args.data = data;
  args.size = param_size;
  loom::onnx::testing::take(loom::sdk::guard([&] {
    loom::ncnnfmt::load_model(args, builder.api(), builder.handle(), weights, weights_size,
                              "fuzz.bin", weights == nullptr);
  }));
  return 0;
}
