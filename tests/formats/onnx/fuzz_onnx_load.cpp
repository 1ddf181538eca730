// libFuzzer target: arbitrary bytes through probe and load of the onnx format, against the
// recording fake builder. Any crash, sanitizer report, leak or uncaught exception is a bug.
#include <cstddef>
#include <cstdint>
#include <loom/plugin.hpp>

#include "fake_builder.hpp"
#include "onnx_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom::onnx;
  loom::sdk::set_host(&testing::fake_host());
  const loom_format_t& format = format_descriptor();
  format.probe(format.user, data, size < 4096 ? size : 4096, "fuzz.onnx");

  testing::FakeBuilder builder;
  loom_load_args_t args{};
  args.struct_size = sizeof args;
  args.path = "fuzz.onnx";
  args.directory = nullptr;  // external data is refused: the fuzzer must not read local files
  args.data = data;
  args.size = size;
  testing::take(format.load(format.user, &args, &builder.api(), builder.handle()));
  return 0;
}
