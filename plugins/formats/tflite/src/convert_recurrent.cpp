// Placeholder until the operators of this family are converted (tflite issue #27).
#include "converter.hpp"

namespace loom::tflite {

bool convert_recurrent(Converter&, int32_t) { return false; }

}  // namespace loom::tflite
