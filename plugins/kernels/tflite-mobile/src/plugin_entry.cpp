// The exported entry of loom_tflite_mobile.so: registers a schema and a cpu kernel for each
// MediaPipe custom operator, domain tflite.custom (the tflite format's custom-operator domain).
#include "tflite_mobile.hpp"

#ifndef LOOM_KERNELS_TFLITE_MOBILE_VERSION
#error "LOOM_KERNELS_TFLITE_MOBILE_VERSION must be defined by the build (the project version)"
#endif

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                               loom_registrar_t* registrar,
                                                               loom_plugin_info_t* info) {
  if (!host || !host->status_new) return nullptr;  // no way to report anything without it
  loom::sdk::set_host(host);
  info->abi_version = LOOM_ABI_VERSION;
  info->name = "tflite_mobile";
  info->version = LOOM_KERNELS_TFLITE_MOBILE_VERSION;
  info->description =
      "TFLite custom operators of MediaPipe mobile models (tflite.custom: "
      "Convolution2DTransposeBias, MaxPoolingWithArgmax2D, MaxUnpooling2D) for the cpu device";
  return loom::sdk::guard([&] {
    loom::sdk::require_host_abi_major(host, "tflite_mobile kernels");
    if (!LOOM_HAS_MEMBER(host, loom_host_api_t, register_kernel) || !host->register_kernel ||
        !host->register_op_schema)
      loom::sdk::fail(LOOM_ERROR_INCOMPATIBLE,
                      "tflite_mobile kernels: the host cannot register op schemas and kernels");
    loom::tflite_mobile::register_transpose_conv_bias(host, registrar);
    loom::tflite_mobile::register_max_pool_argmax(host, registrar);
    loom::tflite_mobile::register_max_unpooling(host, registrar);
  });
}
