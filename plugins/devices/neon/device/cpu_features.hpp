// What the aarch64 CPU offers beyond the baseline (ARMv8.0 has NEON/ASIMD for fp32), read at
// run time from the kernel's hardware capabilities.
#pragma once

#include <string>

namespace loom::neon {

struct CpuFeatures {
  bool fp16_arithmetic = false;  // ARMv8.2 FP16 (HWCAP_FPHP + HWCAP_ASIMDHP)
  bool dot_product = false;      // ARMv8.2 DotProd (HWCAP_ASIMDDP)
};

const CpuFeatures& cpu_features();
// "aarch64 NEON, fp16 arithmetic, dot product" for the device description.
std::string describe_features(const CpuFeatures& f);

}  // namespace loom::neon
