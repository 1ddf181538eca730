#include "status.hpp"

namespace loom::core {

loom_status_t* new_status(loom_status_code_t code, std::string message) {
  return new loom_status_t{code, std::move(message)};
}

void throw_if_error(loom_status_t* status, const std::string& context) {
  if (!status) return;
  loom_status_code_t code = status->code;
  // A plugin that already named the node (the SDK's Attributes helper does) is not prefixed a
  // second time.
  const bool named = !context.empty() && status->message.rfind(context + ": ", 0) == 0;
  std::string message =
      context.empty() || named ? status->message : context + ": " + status->message;
  delete status;
  throw Error(code, message);
}

}  // namespace loom::core
