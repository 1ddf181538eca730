// Data-type facts and element conversions for applications, without linking libloom.
#pragma once

#include <loom/plugin.h>

#include <cstddef>
#include <cstdint>
#include <loom/half.hpp>
#include <string_view>

namespace loom::apps {

// Bytes per element; 0 for STRING and UNDEFINED (strings are held out of line).
size_t dtype_size(loom_dtype_t dtype);
// "float32", "int64", "bfloat16", ... ("undefined" for unknown values).
std::string_view dtype_name(loom_dtype_t dtype);
bool dtype_is_float(loom_dtype_t dtype);    // float16/32/64, bfloat16
bool dtype_is_integer(loom_dtype_t dtype);  // signed and unsigned ints (not bool)

// IEEE binary16 and bfloat16 <-> float, round-to-nearest-even, NaN preserved (the SDK's).
using sdk::bfloat16_to_float;
using sdk::float_to_bfloat16;
using sdk::float_to_half;
using sdk::half_to_float;

// Element `index` of a numeric or bool buffer of `dtype`, widened to double (complex: the real
// part). Precondition: dtype_size(dtype) > 0.
double element_as_double(loom_dtype_t dtype, const void* data, size_t index);
// True when element_as_double can represent every value exactly (ints up to 2^53 excepted).
bool dtype_is_real_number(loom_dtype_t dtype);

}  // namespace loom::apps
