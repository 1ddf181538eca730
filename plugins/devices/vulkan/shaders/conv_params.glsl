// Specialization constants shared by the convolution kernels (2-D, NCHW; 1-D convs use H = 1).
layout(constant_id = 1) const uint BATCH = 1;
layout(constant_id = 2) const uint C = 1;   // input channels (all groups)
layout(constant_id = 3) const uint H = 1;
layout(constant_id = 4) const uint W = 1;
layout(constant_id = 5) const uint K = 1;   // output channels (all groups)
layout(constant_id = 6) const uint OH = 1;
layout(constant_id = 7) const uint OW = 1;
layout(constant_id = 8) const uint KH = 1;
layout(constant_id = 9) const uint KW = 1;
layout(constant_id = 10) const uint SH = 1;
layout(constant_id = 11) const uint SW = 1;
layout(constant_id = 12) const uint PT = 0;
layout(constant_id = 13) const uint PL = 0;
layout(constant_id = 14) const uint DH = 1;
layout(constant_id = 15) const uint DW = 1;
layout(constant_id = 16) const uint GROUPS = 1;
layout(constant_id = 17) const uint HAS_BIAS = 0;
layout(constant_id = 18) const uint ACT = 0;
layout(constant_id = 19) const float ACT_ALPHA = 0.0;
layout(constant_id = 20) const float ACT_BETA = 0.0;

layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) readonly buffer Wt { STORE_T w[]; };  // [K, C / GROUPS, KH, KW]
layout(std430, binding = 2) readonly buffer Bias { STORE_T bias[]; };
layout(std430, binding = 3) writeonly buffer Y { STORE_T y[]; };
