// StringNormalizer of the cpu device: stopword removal (case-sensitive or not), case change
// with UTF-8 text, the all-removed output shape and the errors for bad input.
#include <gtest/gtest.h>

#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_strings;
using testing::shape;
using testing::strings_of;
using Strings = std::vector<std::string>;

Tensor normalize(Tensor input, const std::string& action, int64_t case_sensitive,
                 const Strings& stopwords, const std::string& locale = "") {
  KernelHarness h("StringNormalizer", 10);
  h.input(std::move(input));
  if (!action.empty()) h.attr_string("case_change_action", action);
  h.attr_int("is_case_sensitive", case_sensitive);
  if (!stopwords.empty()) h.attr_strings("stopwords", stopwords);
  if (!locale.empty()) h.attr_string("locale", locale);
  return h.run(1)[0];
}

TEST(StringNormalizer, CaseSensitiveStopwordsKeepOtherSpellings) {
  Tensor out =
      normalize(make_strings({4}, {"monday", "Monday", "tuesday", "monday"}), "", 1, {"monday"});
  EXPECT_EQ(shape(out), (std::vector<int64_t>{2}));
  EXPECT_EQ(strings_of(out), (Strings{"Monday", "tuesday"}));
}

TEST(StringNormalizer, CaseInsensitiveStopwordsThenUpperOnOneByC) {
  Tensor out = normalize(make_strings({1, 5}, {"MONDAY", "tuesday", "Monday", "Wed", "mOnDaY"}),
                         "UPPER", 0, {"Monday"});
  EXPECT_EQ(shape(out), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(strings_of(out), (Strings{"TUESDAY", "WED"}));
}

TEST(StringNormalizer, LowerWithoutStopwords) {
  Tensor out = normalize(make_strings({3}, {"ABC", "dEf", "12 Go!"}), "LOWER", 0, {});
  EXPECT_EQ(strings_of(out), (Strings{"abc", "def", "12 go!"}));
}

TEST(StringNormalizer, NoneKeepsTheCaseAndEmptyStrings) {
  Tensor out = normalize(make_strings({3}, {"MiXeD", "", "x"}), "NONE", 1, {});
  EXPECT_EQ(strings_of(out), (Strings{"MiXeD", "", "x"}));
}

TEST(StringNormalizer, MapsNonAsciiLettersByTheDefaultLocale) {
  // Two-byte letters (Ä, É, Ω) change case; a four-byte emoji has no case and stays.
  Tensor out =
      normalize(make_strings({2}, {"Äpfel Éclair", "ΩMEGA \xF0\x9F\x98\x80"}), "LOWER", 1, {});
  EXPECT_EQ(strings_of(out), (Strings{"äpfel éclair", "ωmega \xF0\x9F\x98\x80"}));
  out = normalize(make_strings({1}, {"straße ω"}), "UPPER", 1, {}, "en_US");
  // Unicode's simple (one-to-one) mapping keeps ß: only the full mapping turns it into SS.
  EXPECT_EQ(strings_of(out), (Strings{"STRAßE Ω"}));
}

TEST(StringNormalizer, CaseInsensitiveMatchingFoldsNonAsciiToo) {
  Tensor out = normalize(make_strings({3}, {"ÜBER", "über", "unter"}), "", 0, {"Über"});
  EXPECT_EQ(strings_of(out), (Strings{"unter"}));
}

TEST(StringNormalizer, AllRemovedGivesOneEmptyString) {
  Tensor out = normalize(make_strings({2}, {"monday", "monday"}), "UPPER", 1, {"monday"});
  EXPECT_EQ(shape(out), (std::vector<int64_t>{1}));
  EXPECT_EQ(strings_of(out), (Strings{""}));
  out = normalize(make_strings({1, 2}, {"a", "A"}), "", 0, {"a"});
  EXPECT_EQ(shape(out), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(strings_of(out), (Strings{""}));
}

TEST(StringNormalizer, EmptyInputGivesOneEmptyString) {
  Tensor out = normalize(make_strings({0}, {}), "LOWER", 0, {"x"});
  EXPECT_EQ(shape(out), (std::vector<int64_t>{1}));
  EXPECT_EQ(strings_of(out), (Strings{""}));
}

void expect_error(Tensor input, const std::string& action, const std::string& locale,
                  loom_status_code_t code, const std::string& text) {
  try {
    normalize(std::move(input), action, 0, {}, locale);
    ADD_FAILURE() << "expected an error containing '" << text << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("StringNormalizer node 'test'"), std::string::npos)
        << e.what();
  }
}

TEST(StringNormalizer, RejectsBadInput) {
  expect_error(make_strings({2, 1}, {"a", "b"}), "", "", LOOM_ERROR_INVALID_ARGUMENT,
               "[C] or [1, C]");
  expect_error(make_strings({1, 1, 1}, {"a"}), "", "", LOOM_ERROR_INVALID_ARGUMENT,
               "[C] or [1, C]");
  expect_error(testing::make_filled<float>({1}, {1.0f}), "", "", LOOM_ERROR_INVALID_ARGUMENT,
               "string tensor");
  expect_error(make_strings({1}, {"a"}), "TITLE", "", LOOM_ERROR_INVALID_MODEL,
               "LOWER, UPPER or NONE");
  expect_error(make_strings({2}, {"ok", "\xC3("}), "UPPER", "", LOOM_ERROR_INVALID_ARGUMENT,
               "input string 1 is not valid UTF-8");
  expect_error(make_strings({1}, {"\xC0\x80"}), "UPPER", "", LOOM_ERROR_INVALID_ARGUMENT,
               "not valid UTF-8");  // overlong encoding of NUL
  expect_error(make_strings({1}, {"a"}), "UPPER", "xx_NOWHERE", LOOM_ERROR_UNSUPPORTED,
               "locale 'xx_NOWHERE' is not installed");
}

}  // namespace
}  // namespace loom::cpu
