// libFuzzer target: hostile image files for the cpu device's ImageDecoder (docs/limits.md, "The
// run-time fuzzer"). The input bytes are the encoded stream itself; the first byte's low bits
// pick the pixel format. One model (a single ImageDecoder node) is loaded once through libloom's
// public C API; each input runs in a fresh session on the cpu device under tight limits (1
// thread, 64 MiB per tensor, 256 MiB per run, a 2 s deadline), so every decoder (JPEG, PNG, TIFF,
// WebP and JPEG 2000 through Debian's libraries, BMP and PNM parsed by Loom) meets truncated,
// corrupt and absurdly sized files.
//
// Oracle: no crash, ASan report, leak or hang; a failure carries a one-line message and is not
// an internal error; a decoded image is [H, W, C] uint8 with C the pixel format's channels and
// exactly H * W * C bytes. A violation ends in __builtin_trap() after printing what was wrong.
// Seeds: tests/fuzz/corpus_image_decoder (a 32x32 image in each format, as the ONNX backend
// tests encode it, and hand-made BMP/PNM files).
#include <loom/loom.h>
#include <onnx/onnx_pb.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_runtime.hpp"

namespace {

[[noreturn]] void violation(const std::string& what) {
  std::fprintf(stderr, "fuzz_image_decoder: oracle violated: %s\n", what.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

const char* const kFormats[] = {"RGB", "BGR", "Grayscale"};

// The decoder model for each pixel format, loaded once.
loom_model_t* model_for(loom_runtime_t* runtime, int format) {
  static loom_model_t* models[3] = {};
  if (models[format]) return models[format];
  onnx::ModelProto m;
  m.set_ir_version(9);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(20);
  auto* g = m.mutable_graph();
  g->set_name("decode");
  auto* in = g->add_input();
  in->set_name("encoded");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::UINT8);
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("bytes");
  g->add_output()->set_name("image");
  auto* node = g->add_node();
  node->set_op_type("ImageDecoder");
  node->add_input("encoded");
  node->add_output("image");
  auto* attr = node->add_attribute();
  attr->set_name("pixel_format");
  attr->set_type(onnx::AttributeProto::STRING);
  attr->set_s(kFormats[format]);
  std::string wire;
  if (!m.SerializeToString(&wire)) std::abort();
  const int fd = memfd_create("fuzz_image_decoder.onnx", MFD_CLOEXEC);
  if (fd < 0 || ::write(fd, wire.data(), wire.size()) != static_cast<ssize_t>(wire.size()))
    std::abort();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (loom_status_t* s = loom_model_load(runtime, path.c_str(), &models[format])) {
    std::fprintf(stderr, "fuzz_image_decoder: load: %s\n", loom_status_message(s));
    std::abort();
  }
  ::close(fd);
  return models[format];
}

loom_runtime_t* the_runtime() {
  return loom_fuzz::fuzz_runtime("fuzz_image_decoder");
}

void check_failure(loom_status_t* s) {
  const loom_status_code_t code = loom_status_code(s);
  const std::string message = loom_status_message(s) ? loom_status_message(s) : "";
  loom_status_free(s);
  if (message.empty()) violation("a failure with an empty message");
  if (message.find('\n') != std::string::npos) violation("a message of several lines: " + message);
  if (code == LOOM_ERROR_INTERNAL) violation("an internal error: " + message);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  the_runtime();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size == 0) return 0;
  const int format = (bytes[0] & 3) % 3;
  loom_runtime_t* runtime = the_runtime();
  loom_model_t* model = model_for(runtime, format);
  const loom_session_options_t so = loom_fuzz::fuzz_session_options();
  loom_session_t* session = nullptr;
  if (loom_status_t* s = loom_session_create(runtime, model, &so, &session)) {
    check_failure(s);
    return 0;
  }
  // The whole input is the file (its first byte included: it is a signature byte as well).
  loom_host_tensor_t in{};
  in.struct_size = sizeof in;
  in.dtype = LOOM_DTYPE_UINT8;
  in.rank = 1;
  in.dims[0] = static_cast<int64_t>(size);
  in.data = const_cast<uint8_t*>(bytes);
  in.byte_size = size;
  const char* name = "encoded";
  loom_host_tensor_t out{};
  out.struct_size = sizeof out;
  if (loom_status_t* s = loom_session_run(session, 1, &name, &in, 1, &out)) {
    check_failure(s);
  } else {
    const int64_t channels = format == 2 ? 1 : 3;
    if (out.dtype != LOOM_DTYPE_UINT8 || out.rank != 3 || out.dims[2] != channels ||
        out.dims[0] <= 0 || out.dims[1] <= 0)
      violation("a decoded image that is not [H, W, " + std::to_string(channels) + "] uint8");
    const uint64_t bytes_expected = static_cast<uint64_t>(out.dims[0]) *
                                    static_cast<uint64_t>(out.dims[1]) *
                                    static_cast<uint64_t>(channels);
    if (out.byte_size != bytes_expected || !out.data) violation("an image of the wrong size");
    volatile uint8_t sink = 0;  // every byte read: ASan sees a buffer shorter than it claims
    for (size_t b = 0; b < out.byte_size; ++b) sink = sink ^ static_cast<uint8_t*>(out.data)[b];
    (void)sink;
    loom_host_tensor_release(&out);
  }
  loom_session_destroy(session);
  return 0;
}
