// RegexFullMatch (20): Y[i] = whether the whole of X[i] matches `pattern`, in RE2's syntax (the
// spec's), through Debian's RE2. Strings are matched as UTF-8. Built only where RE2 is found
// (LOOM_HAVE_RE2, plugins/devices/cpu/CMakeLists.txt); without it the op has no cpu kernel and
// a model using it is refused at placement, naming the op.
#if defined(LOOM_HAVE_RE2)
#include <re2/re2.h>

#include <memory>
#include <string>

#include "kernel.hpp"
#include "nn_common.hpp"

namespace loom::cpu {
namespace {

void regex_full_match(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  if (x.dtype != LOOM_DTYPE_STRING)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": X must be a string tensor, got " + sdk::dtype_name(x.dtype));
  if (!ctx.attrs().has("pattern"))
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": the pattern attribute is missing");
  const std::string pattern = ctx.attrs().get_string("pattern", "");
  RE2::Options options;
  options.set_log_errors(false);  // the error goes into the message below, not to stderr
  const RE2 regex(pattern, options);
  if (!regex.ok())
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": pattern '" + pattern +
                                       "' is not a valid RE2 regular expression: " + regex.error());
  loom_tensor_t& y = ctx.allocate_output(0, LOOM_DTYPE_BOOL, nn::dims_of(x));
  const auto* in = static_cast<const loom_string_t*>(x.data);
  auto* out = sdk::data_of<bool>(y);
  const int64_t count = sdk::element_count(x);
  for (int64_t i = 0; i < count; ++i)
    out[i] = RE2::FullMatch(re2::StringPiece(in[i].data ? in[i].data : "", in[i].size), regex);
}

}  // namespace

LOOM_CPU_KERNEL("RegexFullMatch", 20, regex_full_match, nullptr);

}  // namespace loom::cpu
#endif
