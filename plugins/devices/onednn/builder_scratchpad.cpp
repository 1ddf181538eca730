// Builder::with_own_scratchpad: primitives that need scratch memory, made with a scratchpad the
// program holds (see below for why).
#include <string>

#include "builder.hpp"

namespace loom::onednn {

// oneDNN 2.6 as Debian builds it (without DNNL_ENABLE_CONCURRENT_EXEC) gives a primitive that
// needs scratch memory the scratchpad of the thread that created it, which "cannot migrate
// between threads": a program compiled on one thread and run on another (each session of
// `infer-run --concurrency`, a server's worker threads, Python threads) crashed in ResNet-50's
// Winograd convolutions on a Zen 4 (SIGSEGV in the jitted code). Such a primitive is made again
// with a user-managed scratchpad, which the program holds in its arena as scratch of the step
// (so concurrent runs of one primitive never share it). The same implementation is taken
// where it is still offered (the iterator's first otherwise). Returns the primitive to run and
// sets `scratchpad` to its scratch slot, or -1 where it needs none.
dnnl::primitive Builder::with_own_scratchpad(dnnl::primitive prim, int& scratchpad) {
  scratchpad = -1;
  const_dnnl_primitive_desc_t pd = prim.get_primitive_desc();
  int64_t scratch_bytes = 0;
  if (dnnl_primitive_desc_query(pd, dnnl_query_memory_consumption_s64, 0, &scratch_bytes) !=
          dnnl_success ||
      scratch_bytes <= 0)
    return prim;
  const_dnnl_primitive_attr_t old_attr = nullptr;
  dnnl_primitive_attr_t attr = nullptr;
  if (dnnl_primitive_desc_get_attr(pd, &old_attr) != dnnl_success ||
      dnnl_primitive_attr_clone(&attr, old_attr) != dnnl_success)
    sdk::fail(LOOM_ERROR_INTERNAL, "onednn: cannot copy a primitive's attributes");
  dnnl::primitive_attr owned_attr(attr);  // frees it
  dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  const char* impl = nullptr;
  dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  const std::string wanted = impl ? impl : "";
  dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
  dnnl_primitive_desc_query(pd, dnnl_query_primitive_kind, 0, &kind);
  dnnl_primitive_desc_t made = nullptr;
  if (kind == dnnl_reorder) {
    dnnl_reorder_primitive_desc_create(
        &made, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), program_->engine.get(),
        dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), program_->engine.get(), attr);
  } else {
    const_dnnl_op_desc_t op = nullptr;
    dnnl_primitive_desc_iterator_t it = nullptr;
    if (dnnl_primitive_desc_query(pd, dnnl_query_op_d, 0, &op) == dnnl_success && op &&
        dnnl_primitive_desc_iterator_create(&it, op, attr, program_->engine.get(), nullptr) ==
            dnnl_success) {
      dnnl_primitive_desc_t first = nullptr;
      do {
        dnnl_primitive_desc_t candidate = dnnl_primitive_desc_iterator_fetch(it);
        if (!candidate) break;
        const char* name = nullptr;
        dnnl_primitive_desc_query(candidate, dnnl_query_impl_info_str, 0, &name);
        if (name && wanted == name) {
          made = candidate;
          break;
        }
        if (!first)
          first = candidate;
        else
          dnnl_primitive_desc_destroy(candidate);
      } while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
      dnnl_primitive_desc_iterator_destroy(it);
      if (made && first) dnnl_primitive_desc_destroy(first);
      if (!made) made = first;
    }
  }
  // Concat and sum have no operation descriptor to make them again from; oneDNN's own
  // implementations of them for the layouts this device asks take no scratchpad.
  if (!made) return prim;
  dnnl::primitive_desc_base own(made);  // frees it
  scratchpad = define(-1, own.scratchpad_desc());
  return dnnl::primitive(made);
}

}  // namespace loom::onednn
