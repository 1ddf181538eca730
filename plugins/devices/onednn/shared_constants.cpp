#include "shared_constants.hpp"

#include <string>

namespace loom::onednn {

std::shared_ptr<void> shared_reordered_constant(
    const void* data, const dnnl::memory::desc& src_md, const dnnl::memory::desc& md,
    const std::function<std::shared_ptr<void>()>& make,
    const std::function<void(void* block)>& reorder_into, const char* packing,
    uint64_t content_id) {
  // The form: both descriptors' bytes (plain C structs, zero-filled where unused) and the
  // packing's name.
  std::string form(reinterpret_cast<const char*>(&src_md.data), sizeof src_md.data);
  form.append(reinterpret_cast<const char*>(&md.data), sizeof md.data);
  form += packing;
  return sdk::shared_constant(data, src_md.get_size(), form, content_id, md.get_size(), [&] {
    std::shared_ptr<void> block = make();
    reorder_into(block.get());
    return block;
  });
}

}  // namespace loom::onednn
