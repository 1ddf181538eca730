// StringNormalizer (10): removes the `stopwords` from a [C] or [1, C] string tensor, then lower-
// or upper-cases what is left (case_change_action LOWER / UPPER / NONE) by the rules of
// `locale`. Stopwords match byte for byte when is_case_sensitive = 1, otherwise after both
// sides are lower-cased by the same locale. When every element is removed the output is one
// empty string, shaped [1] or [1, 1] (as the spec says).
//
// Strings are UTF-8: they are decoded to code points and mapped through the locale's
// std::ctype<wchar_t> (wchar_t holds a UCS-4 code point on the platforms Loom builds for).
#include <cstring>
#include <locale>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "kernel.hpp"

namespace loom::cpu {
namespace {

static_assert(sizeof(wchar_t) >= 4, "case mapping needs wchar_t to hold any Unicode code point");

enum class CaseChange { kNone, kLower, kUpper };

CaseChange parse_case_change(const std::string& action, const std::string& where) {
  if (action == "NONE") return CaseChange::kNone;
  if (action == "LOWER") return CaseChange::kLower;
  if (action == "UPPER") return CaseChange::kUpper;
  fail(LOOM_ERROR_INVALID_MODEL,
       where + ": case_change_action must be LOWER, UPPER or NONE, not '" + action + "'");
}

std::optional<std::locale> try_locale(const std::string& name) {
  try {
    return std::locale(name);
  } catch (const std::runtime_error&) {
    return std::nullopt;
  }
}

// The spec leaves the locale names to the platform; ONNX models say "en_US" (the default).
// Tries the UTF-8 variants first because the strings are UTF-8. en_US is rarely installed in
// containers; its case mapping is Unicode's default one, which C.UTF-8 (always part of glibc
// >= 2.35) implements, so that is the fallback for it. Any other missing locale is an error:
// silently using another one would give wrong results for e.g. Turkish dotted/dotless i.
std::locale resolve_locale(std::string name, const std::string& where) {
  if (name.empty()) name = "en_US";
  std::vector<std::string> candidates;
  if (name.find('.') == std::string::npos) {
    candidates.push_back(name + ".UTF-8");
    candidates.push_back(name + ".utf8");
  }
  candidates.push_back(name);
  if (name == "en_US" || name == "C" || name == "POSIX") {
    candidates.push_back("C.UTF-8");
    candidates.push_back("C.utf8");
  }
  for (const std::string& candidate : candidates)
    if (auto loc = try_locale(candidate)) return *loc;
  fail(LOOM_ERROR_UNSUPPORTED, where + ": locale '" + name +
                                   "' is not installed on this system (generate it, e.g. with "
                                   "locale-gen, or use locale en_US)");
}

// Decodes UTF-8 into code points; rejects malformed, overlong and surrogate sequences.
std::u32string decode_utf8(std::string_view s, const std::string& where, size_t index) {
  std::u32string out;
  out.reserve(s.size());
  auto bad = [&]() {
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         where + ": input string " + std::to_string(index) + " is not valid UTF-8");
  };
  for (size_t i = 0; i < s.size();) {
    const auto lead = static_cast<unsigned char>(s[i]);
    size_t length = 0;
    char32_t cp = 0, min = 0;
    if (lead < 0x80) {
      length = 1, cp = lead;
    } else if ((lead & 0xE0) == 0xC0) {
      length = 2, cp = lead & 0x1F, min = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
      length = 3, cp = lead & 0x0F, min = 0x800;
    } else if ((lead & 0xF8) == 0xF0) {
      length = 4, cp = lead & 0x07, min = 0x10000;
    } else {
      bad();
    }
    if (i + length > s.size()) bad();
    for (size_t k = 1; k < length; ++k) {
      const auto cont = static_cast<unsigned char>(s[i + k]);
      if ((cont & 0xC0) != 0x80) bad();
      cp = (cp << 6) | (cont & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) bad();
    out.push_back(cp);
    i += length;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Maps every code point through the locale's toupper/tolower. Code points the locale does not
// know (or maps out of range) are kept as they are.
class CaseMapper {
 public:
  // Keeps the locale: the facet lives only as long as a locale that holds it.
  CaseMapper(std::locale loc, std::string where)
      : locale_(std::move(loc)),
        ctype_(std::use_facet<std::ctype<wchar_t>>(locale_)),
        where_(std::move(where)) {}

  std::string map(std::string_view s, bool upper, size_t index) const {
    std::string out;
    out.reserve(s.size());
    for (char32_t cp : decode_utf8(s, where_, index)) {
      const auto wide = static_cast<wchar_t>(cp);
      const wchar_t mapped = upper ? ctype_.toupper(wide) : ctype_.tolower(wide);
      const auto result = static_cast<char32_t>(mapped);
      const bool valid = result <= 0x10FFFF && (result < 0xD800 || result > 0xDFFF);
      append_utf8(out, valid ? result : cp);
    }
    return out;
  }

 private:
  std::locale locale_;
  const std::ctype<wchar_t>& ctype_;
  std::string where_;
};

std::string_view view_of(const loom_string_t& s) {
  return s.size ? std::string_view(s.data, s.size) : std::string_view();
}

void string_normalizer(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  if (x.dtype != LOOM_DTYPE_STRING)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         where + ": input must be a string tensor, not " + sdk::dtype_name(x.dtype));
  const bool two_dim = x.rank == 2;
  if (!(x.rank == 1 || (two_dim && x.dims[0] == 1)))
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         where + ": input must have shape [C] or [1, C] (got rank " + std::to_string(x.rank) +
             (two_dim ? ", first dimension " + std::to_string(x.dims[0]) : std::string()) + ")");

  const Attributes& attrs = ctx.attrs();
  const CaseChange action =
      parse_case_change(attrs.get_string("case_change_action", "NONE"), where);
  const bool case_sensitive = attrs.get_int("is_case_sensitive", 0) != 0;
  std::vector<std::string> stopwords;
  if (auto words = attrs.get_strings("stopwords"))
    for (const loom_string_t& w : *words) stopwords.emplace_back(view_of(w));

  // The locale is needed only for case mapping (of the output or of the stopword matching).
  const bool needs_locale = action != CaseChange::kNone || (!case_sensitive && !stopwords.empty());
  std::optional<CaseMapper> mapper;
  if (needs_locale)
    mapper.emplace(resolve_locale(attrs.get_string("locale", "en_US"), where), where);

  std::unordered_set<std::string> stop_set;
  for (size_t i = 0; i < stopwords.size(); ++i)
    stop_set.insert(case_sensitive ? stopwords[i] : mapper->map(stopwords[i], false, i));

  const auto* in = sdk::data_of<const loom_string_t>(x);
  const size_t count = static_cast<size_t>(sdk::element_count(x));
  std::vector<std::string> kept;
  kept.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const std::string_view s = view_of(in[i]);
    if (!stop_set.empty()) {
      const bool stop = case_sensitive ? stop_set.count(std::string(s)) != 0
                                       : stop_set.count(mapper->map(s, false, i)) != 0;
      if (stop) continue;
    }
    if (action == CaseChange::kNone)
      kept.emplace_back(s);
    else
      kept.push_back(mapper->map(s, action == CaseChange::kUpper, i));
  }
  if (kept.empty()) kept.emplace_back();  // all removed: one empty string

  const auto n = static_cast<int64_t>(kept.size());
  const std::vector<int64_t> dims = two_dim ? std::vector<int64_t>{1, n} : std::vector<int64_t>{n};
  Tensor result = make_tensor(LOOM_DTYPE_STRING, dims);
  auto* views = static_cast<loom_string_t*>(result.view.data);
  for (size_t i = 0; i < kept.size(); ++i) {
    (*result.strings)[i] = std::move(kept[i]);
    views[i] = {(*result.strings)[i].data(), (*result.strings)[i].size()};
  }
  ctx.set_output(0, std::move(result));
}

}  // namespace

LOOM_CPU_KERNEL("StringNormalizer", 10, string_normalizer, nullptr);

}  // namespace loom::cpu
