// Reordered constants shared across programs (loom/shared_constants.hpp keeps the registry):
// every compiled program reorders its weights into the layouts its primitives want; a model
// with symbolic dimensions gets one program per input shape, and a server opens several
// sessions of one model, so the same weights used to be reordered and held once per program
// (BERT-base: 418 MiB each). A reorder of the same bytes into the same layout is now made once
// per process and shared, reference counted: it lives while a program uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <loom/shared_constants.hpp>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>

namespace loom::onednn {

// The bytes of a plain source (`src_md`, `data`) in layout `md`: an existing shared block
// when one is alive, else `make()` (a block of md's size, from the asking program's constant
// pool) which `reorder_into` fills. `packing` names a layout of the device's own that `md`
// alone does not tell (matvec.hpp's packed weights: "matvec"); "" for oneDNN's reorders.
// `content_id`: the host's identity of the bytes at `data` (sdk::shared_constant). Both
// descriptors take part in the key byte for byte. Thread-safe.
std::shared_ptr<void> shared_reordered_constant(
    const void* data, const dnnl::memory::desc& src_md, const dnnl::memory::desc& md,
    const std::function<std::shared_ptr<void>()>& make,
    const std::function<void(void* block)>& reorder_into, const char* packing = "",
    uint64_t content_id = 0);

using sdk::shared_constant_stats;

}  // namespace loom::onednn
