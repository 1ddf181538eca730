#include "host_blocks.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <loom/host_memory.hpp>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace loom::onednn {

HostBlock allocate_host(size_t bytes) {
  return HostBlock{sdk::allocate_host_block(bytes, "onednn"), bytes};
}

HostBlock allocate_host_huge(size_t bytes, bool prefault) {
  if (bytes > (SIZE_MAX >> 2))
    sdk::fail(LOOM_ERROR_OUT_OF_MEMORY, "onednn: " + std::to_string(bytes) + " bytes is too large");
  // One cache line past the end stays readable, as with sdk::allocate_host_block.
  const size_t rounded = (bytes + 64 + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* p = std::aligned_alloc(kHugePageBytes, rounded);
  if (!p)
    sdk::fail(LOOM_ERROR_OUT_OF_MEMORY,
              "onednn: out of memory allocating " + std::to_string(bytes) + " bytes");
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Advice only: where transparent huge pages are off the block keeps 4-KiB pages.
  (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
  // Fault the pages in now (at compile) rather than in the first run.
  if (prefault) std::memset(p, 0, rounded);
  return HostBlock{std::shared_ptr<void>(p, [](void* q) { std::free(q); }), rounded};
}

void* ConstantPool::allocate(size_t bytes) {
  return allocate_shared(bytes).get();
}

std::shared_ptr<void> ConstantPool::allocate_shared(size_t bytes) {
  const size_t aligned = (bytes + 63) / 64 * 64;
  total_ += bytes;
  if (!huge_pages_ || total_ <= kHugePageBytes) {
    blocks_.push_back(allocate_host(bytes));
    return blocks_.back().owner;
  }
  if (aligned + 64 > left_) {
    // A new chunk: large, so that few constants straddle the end of one (BERT-base's 2.25 MiB
    // matrices in 4 MiB chunks left 80 MiB of them unused).
    blocks_.push_back(allocate_host_huge(std::max(aligned, kConstantChunkBytes - 64), false));
    cursor_ = static_cast<char*>(blocks_.back().data());
    left_ = blocks_.back().bytes;
  }
  huge_total_ += bytes;
  void* p = cursor_;
  cursor_ += aligned;
  left_ -= aligned;
  return std::shared_ptr<void>(blocks_.back().owner, p);  // keeps the whole chunk alive
}

}  // namespace loom::onednn
