// StringConcat and StringSplit of the cpu device beyond the backend tests: Python's str.split
// rules for Unicode whitespace and for what maxsplit leaves whole, and bad input types.
#include <gtest/gtest.h>

#include <stdexcept>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_strings;
using testing::shape;
using testing::strings_of;
using Strings = std::vector<std::string>;

std::vector<Tensor> split(Tensor input, const std::string* delimiter, int64_t maxsplit = -2) {
  KernelHarness h("StringSplit", 20);
  h.input(std::move(input));
  if (delimiter) h.attr_string("delimiter", *delimiter);
  if (maxsplit != -2) h.attr_int("maxsplit", maxsplit);
  return h.run(2);
}

// As "  a b  c ".split(None, 1) == ['a', 'b  c ']: the unsplit rest keeps its trailing blanks.
TEST(StringSplit, WhitespaceWithMaxsplitKeepsTheRestWhole) {
  std::vector<Tensor> out = split(make_strings({2}, {"  a b  c ", "one"}), nullptr, 1);
  EXPECT_EQ(shape(out[0]), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(strings_of(out[0]), (Strings{"a", "b  c ", "one", ""}));
  EXPECT_EQ(testing::values_of<int64_t>(out[1]), (std::vector<int64_t>{2, 1}));
}

// Unicode whitespace (ideographic space, no-break space, NEL, line separator) splits as in
// Python; other multibyte characters, and a lone continuation byte, do not.
TEST(StringSplit, UnicodeWhitespace) {
  std::vector<Tensor> out = split(
      make_strings({1}, {"x\xE3\x80\x80y\xC2\xA0z\xC2\x85w\xE2\x80\xA8\xC3\xA9t\x80u"}), nullptr);
  EXPECT_EQ(strings_of(out[0]), (Strings{"x", "y", "z", "w", "\xC3\xA9t\x80u"}));
}

// A delimiter splits at every occurrence, consecutive ones giving empty strings; a blank or
// empty string without a delimiter has no substring (the row is all padding).
TEST(StringSplit, DelimiterAndBlankStrings) {
  const std::string comma = ",";
  std::vector<Tensor> out = split(make_strings({2}, {"a,,b,", ""}), &comma);
  EXPECT_EQ(strings_of(out[0]), (Strings{"a", "", "b", "", "", "", "", ""}));
  EXPECT_EQ(testing::values_of<int64_t>(out[1]), (std::vector<int64_t>{4, 1}));
  out = split(make_strings({2}, {"   ", ""}), nullptr);
  EXPECT_EQ(shape(out[0]), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(testing::values_of<int64_t>(out[1]), (std::vector<int64_t>{0, 0}));
}

TEST(StringConcat, RefusesNonStringInputs) {
  KernelHarness h("StringConcat", 20);
  h.input(make_strings({1}, {"a"}));
  h.input(testing::make_filled<float>({1}, {1.f}));
  EXPECT_THROW(h.run(1), std::runtime_error);
}

#if defined(LOOM_HAVE_RE2)
// RE2 semantics: the whole string must match, UTF-8 is matched by code point; a pattern RE2
// rejects is a model error that names it.
TEST(RegexFullMatch, WholeStringsAndBadPatterns) {
  KernelHarness h("RegexFullMatch", 20);
  h.input(make_strings({3}, {"caf\xC3\xA9", "cafe", "cafes"}));
  h.attr_string("pattern", "caf.");
  EXPECT_EQ(testing::values_of<bool>(h.run(1)[0]), (std::vector<bool>{true, true, false}));
  KernelHarness bad("RegexFullMatch", 20);
  bad.input(make_strings({1}, {"x"}));
  bad.attr_string("pattern", "(unclosed");
  try {
    bad.run(1);
    ADD_FAILURE() << "an invalid pattern was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a valid RE2 regular expression"),
              std::string::npos)
        << e.what();
  }
}
#endif

}  // namespace
}  // namespace loom::cpu
