// StringConcat (20): Z = X + Y elementwise, numpy broadcasting.
// StringSplit (20): each string of X split as Python's str.split(delimiter, maxsplit) does:
//   with a delimiter (non-empty), at every occurrence of it (consecutive ones give empty
//   strings, an empty string gives one empty string); without one (absent or ""), at runs of
//   whitespace, ignoring leading and trailing whitespace (an empty or all-blank string gives no
//   substring). At most `maxsplit` splits when it is given (the rest stays whole). Y is X's shape
//   plus one axis as long as the most substrings, shorter lists padded with empty strings; Z
//   (int64, X's shape) counts each string's substrings.
//
// Strings are UTF-8. Whitespace is Unicode's (what str.isspace() accepts), decoded from UTF-8; a
// delimiter matches byte for byte, which for valid UTF-8 is a match of code points.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "broadcast.hpp"
#include "kernel.hpp"
#include "nn_common.hpp"

namespace loom::cpu {
namespace {

std::string_view view_of(const loom_string_t& s) {
  return {s.data ? s.data : "", s.size};
}

Tensor string_tensor(std::span<const int64_t> dims, std::vector<std::string> values) {
  Tensor t = make_tensor(LOOM_DTYPE_STRING, dims);
  auto* views = static_cast<loom_string_t*>(t.view.data);
  for (size_t i = 0; i < values.size(); ++i) {
    (*t.strings)[i] = std::move(values[i]);
    views[i] = {(*t.strings)[i].data(), (*t.strings)[i].size()};
  }
  return t;
}

void require_strings(const KernelContext& ctx, const loom_tensor_t& t, const char* what) {
  if (t.dtype != LOOM_DTYPE_STRING)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": " + what + " must be a string tensor, got " + sdk::dtype_name(t.dtype));
}

void string_concat(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& y = ctx.required_input(1);
  require_strings(ctx, x, "X");
  require_strings(ctx, y, "Y");
  const std::vector<int64_t> dims = broadcast_shapes(ctx, {&x, &y});
  Tensor z = make_tensor(LOOM_DTYPE_STRING, dims);
  std::vector<std::string>& out = *z.strings;
  const auto* a = static_cast<const loom_string_t*>(x.data);
  const auto* b = static_cast<const loom_string_t*>(y.data);
  broadcast_apply<2>(ctx, z.view, {&x, &y},
                     [&](size_t o, size_t n, const size_t* in, const size_t* step) {
                       for (size_t i = 0; i < n; ++i) {
                         std::string& s = out[o + i];
                         const std::string_view l = view_of(a[in[0] + i * step[0]]);
                         const std::string_view r = view_of(b[in[1] + i * step[1]]);
                         s.reserve(l.size() + r.size());
                         s.append(l).append(r);
                       }
                     });
  auto* views = static_cast<loom_string_t*>(z.view.data);
  for (size_t i = 0; i < out.size(); ++i) views[i] = {out[i].data(), out[i].size()};
  ctx.set_output(0, std::move(z));
}

// The length of the UTF-8 whitespace character at s[i], or 0 when s[i] starts none (Python's
// str.isspace(): the ASCII controls \t \n \v \f \r, \x1c-\x1f and space, NEL, NBSP, and the
// Unicode separators).
size_t whitespace_at(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) return 1;
  if (c < 0xc2 || i + 1 >= s.size()) return 0;
  const auto c1 = static_cast<unsigned char>(s[i + 1]);
  if (c == 0xc2) return c1 == 0x85 || c1 == 0xa0 ? 2 : 0;
  if (i + 2 >= s.size()) return 0;
  const auto c2 = static_cast<unsigned char>(s[i + 2]);
  const char32_t cp = ((c & 0x0f) << 12) | ((c1 & 0x3f) << 6) | (c2 & 0x3f);
  if ((c & 0xf0) != 0xe0 || (c1 & 0xc0) != 0x80 || (c2 & 0xc0) != 0x80) return 0;
  const bool space = cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 ||
                     cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
  return space ? 3 : 0;
}

std::vector<std::string> split_whitespace(std::string_view s, int64_t maxsplit) {
  std::vector<std::string> parts;
  size_t i = 0;
  auto skip_space = [&] {
    while (i < s.size())
      if (size_t w = whitespace_at(s, i))
        i += w;
      else
        break;
  };
  skip_space();
  while (i < s.size()) {
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      parts.emplace_back(s.substr(i));  // the rest, trailing whitespace included
      break;
    }
    const size_t start = i;
    while (i < s.size() && whitespace_at(s, i) == 0) ++i;
    parts.emplace_back(s.substr(start, i - start));
    skip_space();
  }
  return parts;
}

std::vector<std::string> split_at(std::string_view s, std::string_view delimiter,
                                  int64_t maxsplit) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
    const size_t at = s.find(delimiter, start);
    if (at == std::string_view::npos) break;
    parts.emplace_back(s.substr(start, at - start));
    start = at + delimiter.size();
  }
  parts.emplace_back(s.substr(start));
  return parts;
}

void string_split(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  require_strings(ctx, x, "X");
  const std::string delimiter = ctx.attrs().get_string("delimiter", "");
  const int64_t maxsplit = ctx.attrs().has("maxsplit") ? ctx.attrs().get_int("maxsplit", -1) : -1;
  const auto count = static_cast<size_t>(sdk::element_count(x));
  const auto* in = static_cast<const loom_string_t*>(x.data);
  std::vector<std::vector<std::string>> parts(count);
  size_t widest = 0;
  for (size_t i = 0; i < count; ++i) {
    const std::string_view s = view_of(in[i]);
    parts[i] = delimiter.empty() ? split_whitespace(s, maxsplit) : split_at(s, delimiter, maxsplit);
    widest = std::max(widest, parts[i].size());
  }
  std::vector<int64_t> dims = nn::dims_of(x);
  dims.push_back(static_cast<int64_t>(widest));
  // Every output string is a piece of an input one: the output is at most the input's bytes
  // plus one (empty) string per padded slot, bounded by the run's limits below.
  const std::optional<size_t> slots = sdk::try_byte_size(static_cast<int64_t>(count), widest);
  if (!slots) fail(LOOM_ERROR_LIMIT_EXCEEDED, ctx.where() + ": the split output is too large");
  check_scratch_bytes(*slots * sizeof(std::string), ctx.where() + ": the split strings");
  std::vector<std::string> flat(*slots);
  for (size_t i = 0; i < count; ++i)
    std::move(parts[i].begin(), parts[i].end(), flat.begin() + static_cast<ptrdiff_t>(i * widest));
  loom_tensor_t& counts = ctx.allocate_output(1, LOOM_DTYPE_INT64, nn::dims_of(x));
  auto* z = sdk::data_of<int64_t>(counts);
  for (size_t i = 0; i < count; ++i) z[i] = static_cast<int64_t>(parts[i].size());
  ctx.set_output(0, string_tensor(dims, std::move(flat)));
}

}  // namespace

LOOM_CPU_KERNEL("StringConcat", 20, string_concat, nullptr);
LOOM_CPU_KERNEL("StringSplit", 20, string_split, nullptr);

}  // namespace loom::cpu
