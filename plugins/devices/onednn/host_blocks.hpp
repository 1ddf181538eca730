// Host memory of a compiled program: its arena and its reordered constants.
//
// Blocks of 2 MiB and more are backed by transparent huge pages where the kernel allows it
// (madvise mode, Debian's default). A MobileNet-sized program touches 17 MiB of weights and
// activations per run: 4400 4-KiB pages, more than the second-level TLB holds, and the
// hardware prefetchers stop at every 4-KiB boundary. With 2-MiB pages MobileNetV2 ran 3%,
// ResNet-50 3.5% and BERT 6% faster on the development machine (docs/onednn-device.md,
// item 12).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace loom::onednn {

// An aligned host allocation.
struct HostBlock {
  std::shared_ptr<void> owner;
  size_t bytes = 0;
  void* data() const { return owner.get(); }
};

// `bytes`, 64-byte aligned (sdk::allocate_host_block).
HostBlock allocate_host(size_t bytes);

// Blocks this large or larger are worth their own huge pages.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;
inline constexpr size_t kConstantChunkBytes = size_t{32} << 20;

// `bytes` rounded up to whole 2-MiB pages, 2-MiB aligned and advised as huge pages; with
// `prefault`, written once so that the pages exist before the first run (otherwise a page
// becomes resident when first touched). Without huge-page support this is an ordinary aligned
// allocation of the rounded size.
HostBlock allocate_host_huge(size_t bytes, bool prefault);

// A program's constants, allocated one after another (64-byte aligned) and freed together.
// The first 2 MiB come from the ordinary heap, so small programs keep a small footprint;
// once a program has that much, further constants go into huge-page chunks of 32 MiB (or the
// constant's size). A chunk's pages become resident as constants are written into them, so
// what a program leaves unused at the end of its last chunk costs address space only.
class ConstantPool {
 public:
  explicit ConstantPool(bool huge_pages) : huge_pages_(huge_pages) {}
  void* allocate(size_t bytes);
  // The same, owning: the block (and the chunk it lies in) outlives the pool while the pointer
  // lives, for constants other programs share (shared_constants.hpp).
  std::shared_ptr<void> allocate_shared(size_t bytes);
  size_t bytes() const { return total_; }                 // asked for, without rounding
  size_t huge_page_bytes() const { return huge_total_; }  // of those, in huge-page chunks

 private:
  bool huge_pages_;
  std::vector<HostBlock> blocks_;
  size_t total_ = 0;
  size_t huge_total_ = 0;
  char* cursor_ = nullptr;  // free space of the current huge chunk
  size_t left_ = 0;
};

}  // namespace loom::onednn
