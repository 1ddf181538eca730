// loom/heap_trim.hpp: a scope that frees more heap than its threshold hands the pages back to
// the system (resident memory falls); one that frees less leaves the heap alone. glibc only, and
// not under the sanitizers, whose allocators replace glibc's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <loom/heap_trim.hpp>
#include <vector>

namespace {

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LOOM_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LOOM_TEST_SANITIZED 1
#endif

#if defined(__GLIBC__) && !defined(LOOM_TEST_SANITIZED)
// Resident bytes of this process (/proc/self/statm's second field).
size_t resident_bytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<size_t>(resident) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// 32 MiB in 64 KiB blocks (below glibc's mmap threshold: heap memory), touched, with a small
// block kept between each pair so that freeing the big ones leaves holes no free() trims.
struct Fragments {
  std::vector<void*> big, small;
  Fragments() {
    for (int i = 0; i < 512; ++i) {
      big.push_back(std::malloc(64 << 10));
      std::memset(big.back(), 1, 64 << 10);
      small.push_back(std::malloc(64));
    }
  }
  void free_big() {
    for (void* p : big) std::free(p);
    big.clear();
  }
  ~Fragments() {
    free_big();
    for (void* p : small) std::free(p);
  }
};

TEST(HeapTrim, ReturnsWhatAScopeFreedAboveItsThreshold) {
  {
    Fragments f;
    const size_t before = resident_bytes();
    {
      loom::sdk::HeapTrim trim(size_t{64} << 20);  // 32 MiB freed: below this threshold
      f.free_big();
    }
    EXPECT_GT(resident_bytes() + (size_t{8} << 20), before) << "trimmed below the threshold";
  }
  Fragments f;
  const size_t before = resident_bytes();
  {
    loom::sdk::HeapTrim trim;  // 8 MiB
    f.free_big();
  }
  EXPECT_LT(resident_bytes() + (size_t{16} << 20), before)
      << "32 MiB freed in a trimming scope stayed resident";
}
#else
TEST(HeapTrim, ReturnsWhatAScopeFreedAboveItsThreshold) {
  GTEST_SKIP() << "glibc's allocator only";
}
#endif

}  // namespace
