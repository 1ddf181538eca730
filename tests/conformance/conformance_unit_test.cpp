// The conformance runner's parts: tolerance comparison, the expected-failures format, the
// forked child pool (crashes and hangs become failures of one test) and which session error
// --skip-unclaimed turns into a skip.
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <loom_apps/dtype.hpp>
#include <loom_apps/tensor_proto.hpp>
#include <map>
#include <thread>

#include "child_pool.hpp"
#include "expected_failures.hpp"
#include "tensor_compare.hpp"
#include "test_case.hpp"

namespace loom::conformance {
namespace {

using loom::apps::HostTensor;

HostTensor floats(std::vector<float> values) {
  HostTensor t = HostTensor::zeros(LOOM_DTYPE_FLOAT32, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.as<float>());
  return t;
}

TEST(Compare, AppliesTheDocumentedTolerance) {
  EXPECT_FALSE(compare_tensors(floats({1.0f, 100.0f}), floats({1.0009f, 100.09f})));
  auto diff = compare_tensors(floats({1.0f, 100.0f}), floats({1.0f, 100.2f}));
  ASSERT_TRUE(diff);
  EXPECT_NE(diff->find("element [1]"), std::string::npos) << *diff;
  EXPECT_NE(diff->find("1 of 2 elements differ"), std::string::npos) << *diff;
  // Near zero only atol applies.
  EXPECT_FALSE(compare_tensors(floats({0.0f}), floats({5e-8f})));
  EXPECT_TRUE(compare_tensors(floats({0.0f}), floats({1e-6f})));
}

TEST(Compare, NanEqualsNanAndInfinitiesMustMatch) {
  float nan = std::nanf(""), inf = INFINITY;
  EXPECT_FALSE(compare_tensors(floats({nan, inf, -inf}), floats({nan, inf, -inf})));
  EXPECT_TRUE(compare_tensors(floats({1.0f}), floats({nan})));
  EXPECT_TRUE(compare_tensors(floats({inf}), floats({-inf})));
  EXPECT_TRUE(compare_tensors(floats({1e30f}), floats({inf})));
}

TEST(Compare, DtypeShapeAndExactTypes) {
  HostTensor a = HostTensor::zeros(LOOM_DTYPE_INT64, {2, 2});
  HostTensor b = a;
  EXPECT_FALSE(compare_tensors(a, b));
  b.as<int64_t>()[3] = int64_t{1} << 60;
  auto diff = compare_tensors(a, b);
  ASSERT_TRUE(diff);
  EXPECT_NE(diff->find("element [1, 1] is 0, expected 1152921504606846976"), std::string::npos)
      << *diff;
  EXPECT_NE(compare_tensors(floats({1}), a)->find("dtype float32, expected int64"),
            std::string::npos);
  HostTensor reshaped = a;
  reshaped.dims = {4, 1};
  EXPECT_NE(compare_tensors(reshaped, a)->find("shape [4, 1], expected [2, 2]"), std::string::npos);

  HostTensor s1, s2;
  s1.dtype = s2.dtype = LOOM_DTYPE_STRING;
  s1.dims = s2.dims = {2};
  s1.strings = {"a", "b"};
  s2.strings = {"a", "c"};
  EXPECT_TRUE(compare_tensors(s1, s2));
  EXPECT_FALSE(compare_tensors(s1, s1));
}

TEST(Compare, HalfPrecisionComparesAsValues) {
  HostTensor a = HostTensor::zeros(LOOM_DTYPE_FLOAT16, {1});
  HostTensor b = a;
  a.as<uint16_t>()[0] = loom::apps::float_to_half(1.0f);
  b.as<uint16_t>()[0] = loom::apps::float_to_half(1.0f);
  EXPECT_FALSE(compare_tensors(a, b));
  b.as<uint16_t>()[0] = loom::apps::float_to_half(1.5f);
  EXPECT_TRUE(compare_tensors(a, b));
}

TEST(Compare, ValuesCompareKindPresenceCountThenElements) {
  using loom::apps::HostValue;
  using loom::apps::ValueKind;
  HostValue seq;
  seq.kind = ValueKind::kSequence;
  seq.tensors = {floats({1, 2}), floats({3})};
  EXPECT_FALSE(compare_values(seq, seq));
  HostValue shorter = seq;
  shorter.tensors.pop_back();
  auto diff = compare_values(shorter, seq);
  ASSERT_TRUE(diff);
  EXPECT_NE(diff->find("got 1 tensors, expected 2"), std::string::npos) << *diff;
  HostValue off = seq;
  off.tensors[1] = floats({4});
  diff = compare_values(off, seq);
  ASSERT_TRUE(diff);
  EXPECT_NE(diff->find("element 1: "), std::string::npos) << *diff;
  HostValue tensor = HostValue::of_tensor(floats({1, 2}));
  diff = compare_values(tensor, seq);
  ASSERT_TRUE(diff);
  EXPECT_NE(diff->find("got a tensor, expected a seq(tensor)"), std::string::npos) << *diff;
  HostValue none;
  none.kind = ValueKind::kOptionalTensor;
  none.has_value = false;
  HostValue some = none;
  some.has_value = true;
  some.tensors = {floats({1})};
  diff = compare_values(none, some);
  ASSERT_TRUE(diff);
  EXPECT_NE(diff->find("got an empty optional"), std::string::npos) << *diff;
}

TEST(ValueProto, ReadsSequenceAndOptionalTestData) {
  const std::filesystem::path node = "/usr/share/libonnx-testdata/data/node";
  if (!std::filesystem::exists(node / "test_sequence_insert_at_back"))
    GTEST_SKIP() << "no ONNX backend test data";
  using loom::apps::ValueKind;
  auto seq = loom::apps::read_value_proto(
      (node / "test_sequence_insert_at_back/test_data_set_0/input_0.pb").string(),
      ValueKind::kSequence);
  EXPECT_EQ(seq.value.kind, ValueKind::kSequence);
  ASSERT_EQ(seq.value.tensors.size(), 3u);
  EXPECT_EQ(seq.value.tensors[0].dtype, LOOM_DTYPE_INT64);
  auto empty = loom::apps::read_value_proto(
      (node / "test_optional_has_element_empty/test_data_set_0/input_0.pb").string(),
      ValueKind::kOptionalTensor);
  EXPECT_FALSE(empty.value.has_value);
  EXPECT_TRUE(empty.value.tensors.empty());
  auto some = loom::apps::read_value_proto(
      (node / "test_optional_get_element_sequence/test_data_set_0/input_0.pb").string(),
      ValueKind::kOptionalSequence);
  EXPECT_TRUE(some.value.has_value);
  EXPECT_FALSE(some.value.tensors.empty());
  // Read as the wrong kind, an optional of a sequence says what it holds.
  EXPECT_THROW(
      loom::apps::read_value_proto(
          (node / "test_optional_get_element_sequence/test_data_set_0/input_0.pb").string(),
          ValueKind::kOptionalTensor),
      loom::apps::TensorIoError);
}

TEST(SkipUnclaimed, OnlyTheUnplacedNodeErrorIsASkip) {
  const std::string unplaced =
      "2 nodes are supported by none of the devices (fallback to cpu is off): Add node 'a' "
      "(onednn: no kernel)";
  EXPECT_TRUE(is_unclaimed_node_error(LOOM_ERROR_UNSUPPORTED, unplaced));
  // The same words under another code, and other unsupported errors, stay failures.
  EXPECT_FALSE(is_unclaimed_node_error(LOOM_ERROR_INVALID_MODEL, unplaced));
  EXPECT_FALSE(
      is_unclaimed_node_error(LOOM_ERROR_UNSUPPORTED, "Conv node 'c': group = 3 is not supported"));
  EXPECT_FALSE(is_unclaimed_node_error(LOOM_ERROR_UNSUPPORTED, "unknown device 'onednn'"));
}

TEST(ExpectedFailures, ParsesEntriesReasonsAndComments) {
  auto entries = parse_expected_failures(
      "# header\n\nnode/test_a  # unsupported op Foo\nsimple/test_b\n  node/test_c #x\n", "f");
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries["node/test_a"], "unsupported op Foo");
  EXPECT_EQ(entries["simple/test_b"], "");
  EXPECT_EQ(entries["node/test_c"], "x");
}

TEST(ExpectedFailures, RefusesMalformedLines) {
  EXPECT_THROW(parse_expected_failures("test_without_suite\n", "f"), std::runtime_error);
  EXPECT_THROW(parse_expected_failures("node/a b\n", "f"), std::runtime_error);
  EXPECT_THROW(parse_expected_failures("node/a\nnode/a\n", "f"), std::runtime_error);
}

TEST(ExpectedFailures, WrittenFileReadsBack) {
  auto path = (std::filesystem::temp_directory_path() / "loom_xfail_test.txt").string();
  std::map<std::string, std::string> failures = {{"node/test_x", "run: bad\nthing"},
                                                 {"simple/y", "crashed: signal 11 (SIGSEGV)"}};
  write_expected_failures(path, failures, "generated\nby a test");
  auto back = read_expected_failures(path);
  std::filesystem::remove(path);
  EXPECT_EQ(back.size(), 2u);
  EXPECT_EQ(back["node/test_x"], "run: bad thing");
  EXPECT_EQ(back["simple/y"], "crashed: signal 11 (SIGSEGV)");
}

TEST(ChildPool, ReportsResultsCrashesAndTimeouts) {
  PoolSettings settings;
  settings.jobs = 3;
  settings.timeout = std::chrono::seconds(2);
  std::map<size_t, CaseResult> results;
  auto start = std::chrono::steady_clock::now();
  run_in_children(
      5, settings,
      [](size_t i) -> CaseResult {
        switch (i) {
          case 0:
            return {Outcome::kPass, ""};
          case 1:
            return {Outcome::kFail, "values differ"};
          case 2:
            std::raise(SIGSEGV);
            return {};
          case 3:
            std::this_thread::sleep_for(std::chrono::hours(1));
            return {};
          default:
            throw std::runtime_error("thrown in child");
        }
      },
      [&](size_t i, const CaseResult& r) { results[i] = r; });
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(results.size(), 5u);
  EXPECT_EQ(results[0].outcome, Outcome::kPass);
  EXPECT_EQ(results[1].outcome, Outcome::kFail);
  EXPECT_EQ(results[1].reason, "values differ");
  EXPECT_EQ(results[2].outcome, Outcome::kFail);
  EXPECT_EQ(results[2].reason, "crashed: signal 11 (SIGSEGV)");
  EXPECT_EQ(results[3].reason, "timed out after 2 s");
  EXPECT_EQ(results[4].reason, "thrown in child");
  EXPECT_LT(elapsed, std::chrono::seconds(20));
}

}  // namespace
}  // namespace loom::conformance
