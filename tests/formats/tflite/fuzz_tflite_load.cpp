// libFuzzer target: arbitrary bytes through probe, verification and conversion of the tflite
// format, against the recording fake builder of the ONNX tests. Any crash, sanitizer report,
// leak or uncaught exception is a bug.
#include <cstddef>
#include <cstdint>
#include <loom/plugin.hpp>

#include "fake_builder.hpp"
#include "tflite_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  loom::sdk::set_host(&loom::onnx::testing::fake_host());
  loom::tflite::probe(data, size < 4096 ? size : 4096);
  loom::onnx::testing::FakeBuilder builder;
  loom_load_args_t args{};
  args.struct_size = sizeof args;
  args.path = "fuzz.tflite";
  args.data = data;
  args.size = size;
  loom::onnx::testing::take(
      loom::sdk::guard([&] { loom::tflite::load_model(args, builder.api(), builder.handle()); }));
  return 0;
}
