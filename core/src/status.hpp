// Status objects of the ABI and the public API, and the conversion from C++ errors.
#pragma once

#include <loom/plugin.hpp>

#include <string>

// The opaque loom_status_t: always created by the core, freed with loom_status_free.
struct loom_status_t {
  loom_status_code_t code;
  std::string message;
};

namespace loom::core {

using sdk::Error;
using sdk::fail;

loom_status_t* new_status(loom_status_code_t code, std::string message);

// Runs fn; converts exceptions into a status (NULL on success). For every C API entry point.
template <typename Fn>
loom_status_t* guard_status(Fn&& fn) noexcept {
  try {
    fn();
    return nullptr;
  } catch (const Error& e) {
    return new_status(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return new_status(LOOM_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return new_status(LOOM_ERROR_INTERNAL, e.what());
  } catch (...) {
    return new_status(LOOM_ERROR_INTERNAL, "unknown exception");
  }
}

// Throws (and frees) a status returned by a plugin. `context` prefixes the message.
void throw_if_error(loom_status_t* status, const std::string& context = "");

}  // namespace loom::core
