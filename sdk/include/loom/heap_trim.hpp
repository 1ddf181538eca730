// Handing freed heap memory back to the system after work that frees a lot at once (a compile
// that drops its intermediate weights, a plan cache that evicts a plan). glibc keeps large freed
// blocks in its heap once its dynamic mmap threshold has grown (every free of an mmapped block
// raises the threshold to that block's size, up to 32 MiB), so such memory stays resident until
// the process ends, and a cache that evicts and compiles in turn grows run after run without
// leaking a byte (MobileNetV2, 20 input shapes cycling through a 16-plan cache: resident memory
// 1.58x after 500 runs, 1.82x after 1500; flat with the trim).
//
//   { sdk::HeapTrim trim;  ... free things ... }  // trims if the scope freed > kTrimBytes
//
// A trim walks the heap and returns every free page, which later runs fault back in: done only
// when the scope left that much more free, never for the small frees of a generation loop's
// per-step compiles (trimming there cost 5% of each step and the page faults after it 10% more).
// Elsewhere than glibc this does nothing.
#pragma once

#include <cstddef>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace loom::sdk {

class HeapTrim {
 public:
  static constexpr size_t kTrimBytes = size_t{8} << 20;

#if defined(__GLIBC__)
  explicit HeapTrim(size_t min_bytes = kTrimBytes)
      : free_before_(mallinfo2().fordblks), min_bytes_(min_bytes) {}
  ~HeapTrim() {
    if (mallinfo2().fordblks > free_before_ + min_bytes_) malloc_trim(0);
  }

 private:
  size_t free_before_, min_bytes_;
#else
  explicit HeapTrim(size_t = kTrimBytes) {}
#endif

 public:
  HeapTrim(const HeapTrim&) = delete;
  HeapTrim& operator=(const HeapTrim&) = delete;
};

}  // namespace loom::sdk
