// Builder::remade: primitives made again with a scratchpad the program holds (when they need
// scratch memory; see below for why) and, for small computations, for one thread.
#include <omp.h>

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
// where it is still offered (the iterator's first otherwise).
//
// `one_thread`: oneDNN's convolutions, matmuls and inner products split their work over the
// threads oneDNN sees when the primitive descriptor is made (omp_get_max_threads() then, kept in
// the primitive and in its primitive-cache key), and then open an OpenMP region of that many
// threads at every execution. A primitive made while the caller allows one thread runs inline.
// It is kept only where it is the same implementation with the same memory layouts for every
// argument in `args` (the step's): the operation descriptor still says `any` where the caller
// let oneDNN choose, and with one thread a brgemm convolution may choose other weight or source
// blocks than the ones the builder already reordered the weights into (the VAD model's 1-D
// convolutions computed garbage before this check). Otherwise the primitive keeps its team.
//
// Returns the primitive to run, sets `scratchpad` to its scratch slot (-1 where it needs none)
// and `one_thread` to whether the primitive returned was made for one thread.
dnnl::primitive Builder::remade(dnnl::primitive prim, bool& one_thread,
                                const std::vector<std::pair<int, int>>& args, int& scratchpad) {
  scratchpad = -1;
  const_dnnl_primitive_desc_t pd = prim.get_primitive_desc();
  int64_t scratch_bytes = 0;
  if (dnnl_primitive_desc_query(pd, dnnl_query_memory_consumption_s64, 0, &scratch_bytes) !=
      dnnl_success)
    scratch_bytes = 0;
  if (scratch_bytes <= 0 && !one_thread) return prim;
  // The caller's thread count comes back however this returns.
  struct Threads {
    int saved = omp_get_max_threads();
    explicit Threads(bool one) {
      if (one) omp_set_num_threads(1);
    }
    ~Threads() { omp_set_num_threads(saved); }
  } threads(one_thread);
  const_dnnl_primitive_attr_t old_attr = nullptr;
  dnnl_primitive_attr_t attr = nullptr;
  if (dnnl_primitive_desc_get_attr(pd, &old_attr) != dnnl_success ||
      dnnl_primitive_attr_clone(&attr, old_attr) != dnnl_success)
    sdk::fail(LOOM_ERROR_INTERNAL, "onednn: cannot copy a primitive's attributes");
  dnnl::primitive_attr owned_attr(attr);  // frees it
  // User-managed in both cases: a primitive made for one thread may need scratch memory that
  // the original did not.
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
  if (!made) {
    one_thread = false;
    return prim;
  }
  dnnl::primitive_desc_base own(made);  // frees it
  if (one_thread) {
    const char* name = nullptr;
    dnnl_primitive_desc_query(made, dnnl_query_impl_info_str, 0, &name);
    bool same = name && wanted == name;
    for (const auto& [arg, slot] : args) {
      (void)slot;
      const dnnl_memory_desc_t* before =
          dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
      const dnnl_memory_desc_t* now =
          dnnl_primitive_desc_query_md(made, dnnl_query_exec_arg_md, arg);
      same = same && (before == nullptr) == (now == nullptr) &&
             (!before || dnnl_memory_desc_equal(before, now));
    }
    if (!same) {
      one_thread = false;
      omp_set_num_threads(threads.saved);  // the team's primitive, made as before
      return remade(std::move(prim), one_thread, args, scratchpad);
    }
  }
  if (own.scratchpad_desc().get_size() > 0) scratchpad = define(-1, own.scratchpad_desc());
  return dnnl::primitive(made);
}

}  // namespace loom::onednn
