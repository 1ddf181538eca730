#include "kernel.hpp"

#include <cstdlib>
#include <cstring>

namespace loom::cpu {

KernelRegistry& KernelRegistry::instance() {
  static KernelRegistry registry;
  return registry;
}

void KernelRegistry::add(const KernelDef& def) { defs_.push_back(def); }

const KernelDef* KernelRegistry::find(std::string_view domain, std::string_view op_type,
                                      int64_t opset) const {
  // "ai.onnx" is the long name of the default domain.
  if (domain == "ai.onnx") domain = "";
  const KernelDef* best = nullptr;
  for (const KernelDef& def : defs_) {
    if (domain != def.domain || op_type != def.op_type || def.since_version > opset) continue;
    if (!best || def.since_version > best->since_version) best = &def;
  }
  return best;
}

Tensor make_tensor(loom_dtype_t dtype, std::span<const int64_t> dims) {
  if (dims.size() > LOOM_MAX_RANK)
    fail(LOOM_ERROR_UNSUPPORTED, "tensor rank " + std::to_string(dims.size()) +
                                     " exceeds the maximum of " + std::to_string(LOOM_MAX_RANK));
  Tensor t;
  t.view.dtype = dtype;
  t.view.rank = static_cast<int32_t>(dims.size());
  size_t count = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) fail(LOOM_ERROR_INVALID_ARGUMENT, "negative dimension in a tensor shape");
    t.view.dims[i] = dims[i];
    if (dims[i] != 0 && count > SIZE_MAX / 16 / static_cast<size_t>(dims[i]))
      fail(LOOM_ERROR_OUT_OF_MEMORY, "tensor shape is too large to allocate");
    count *= static_cast<size_t>(dims[i]);
  }
  if (dtype == LOOM_DTYPE_STRING) {
    t.strings = std::make_shared<std::vector<std::string>>(count);
    auto* views = new loom_string_t[count ? count : 1]();
    t.owner = std::shared_ptr<void>(views, [](void* p) { delete[] static_cast<loom_string_t*>(p); });
    t.view.data = views;
    t.view.byte_size = count * sizeof(loom_string_t);
    return t;
  }
  size_t elem = sdk::dtype_size(dtype);
  if (elem == 0) fail(LOOM_ERROR_UNSUPPORTED, std::string("cannot allocate a tensor of type ") +
                                                  sdk::dtype_name(dtype));
  size_t bytes = count * elem;
  // 64-byte alignment so vectorised loops and SIMD libraries get aligned rows.
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
  if (!p) fail(LOOM_ERROR_OUT_OF_MEMORY, "out of memory allocating " + std::to_string(bytes) + " bytes");
  std::memset(p, 0, bytes);
  t.owner = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  t.view.data = p;
  t.view.byte_size = bytes;
  return t;
}

}  // namespace loom::cpu
