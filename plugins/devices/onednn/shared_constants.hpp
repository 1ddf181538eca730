// Reordered constants shared across programs. Every compiled program reorders its weights into
// the layouts its primitives want; a model with symbolic dimensions gets one program per input
// shape, and a server opens several sessions of one model, so the same weights used to be
// reordered and held once per program (BERT-base: 418 MiB each). A reorder of the same bytes
// into the same layout is now made once per process and shared, reference counted: it lives
// while a program uses it.
//
// Identity is by content, not by address: the core frees constant bytes after compile (ABI 1.3
// constant_copied), so an address may come back holding other data. The key is a 64-bit
// SipHash of the bytes under a key drawn at random per process (a model cannot be crafted to
// collide with another model's weights without knowing it), plus the byte count and both
// memory descriptors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>

namespace loom::onednn {

// The bytes of a plain source (`src_md`, `data`) in layout `md`: an existing shared block
// when one is alive, else `make()` (a block of md's size, from the asking program's constant
// pool) which `reorder_into` fills. `packing` names a layout of the device's own that `md`
// alone does not tell (matvec.hpp's packed weights: "matvec"); "" for oneDNN's reorders.
// `content_id`, when nonzero, is the host's identity of exactly the bytes at `data` (plugin ABI
// 1.7): their hash is then computed once per id, not once per compile (a 0.5B-parameter decoder
// layer's 60 MB took ~30 ms to hash, at every step of a generation loop). Thread-safe.
std::shared_ptr<void> shared_reordered_constant(
    const void* data, const dnnl::memory::desc& src_md, const dnnl::memory::desc& md,
    const std::function<std::shared_ptr<void>()>& make,
    const std::function<void(void* block)>& reorder_into, const char* packing = "",
    uint64_t content_id = 0);

struct SharedConstantStats {
  uint64_t hits = 0, misses = 0;
  uint64_t hashed_bytes = 0;  // hashed so far (bytes known by content_id are hashed once)
  size_t live_blocks = 0, live_bytes = 0;
};
SharedConstantStats shared_constant_stats();

// SipHash-2-4 of `bytes` under a 128-bit key (exposed for its test vectors).
uint64_t siphash24(const uint64_t key[2], const void* bytes, size_t size);

}  // namespace loom::onednn
