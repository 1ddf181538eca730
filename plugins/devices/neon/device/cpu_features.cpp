#include "device/cpu_features.hpp"

#include <sys/auxv.h>

#if defined(__aarch64__)
#include <asm/hwcap.h>
#endif

namespace loom::neon {

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures f;
#if defined(__aarch64__)
    unsigned long hwcap = getauxval(AT_HWCAP);
    f.fp16_arithmetic = (hwcap & HWCAP_FPHP) && (hwcap & HWCAP_ASIMDHP);
    f.dot_product = (hwcap & HWCAP_ASIMDDP) != 0;
#endif
    return f;
  }();
  return features;
}

std::string describe_features(const CpuFeatures& f) {
  std::string text = "aarch64 NEON";
  if (f.fp16_arithmetic) text += ", fp16 arithmetic";
  if (f.dot_product) text += ", dot product";
  return text;
}

}  // namespace loom::neon
