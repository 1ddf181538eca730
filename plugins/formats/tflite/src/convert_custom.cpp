// Custom operators: refused until they are handed to op-kernel plugins (tflite issue #27).
#include <loom/plugin.hpp>

#include "converter.hpp"

namespace loom::tflite {

void convert_custom(Converter& c) {
  sdk::fail(LOOM_ERROR_UNSUPPORTED, "tflite: " + c.where() +
                                        ": custom operators are not supported; re-export the "
                                        "model with builtin operators only");
}

}  // namespace loom::tflite
