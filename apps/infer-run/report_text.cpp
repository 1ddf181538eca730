#include <fmt/format.h>

#include <loom_apps/dtype.hpp>
#include <loom_apps/json_writer.hpp>

#include "report.hpp"

namespace loom::infer_run {
namespace {

using loom::apps::HostTensor;

// Values shown per output in text mode; integer vectors (class ids, token ids, the digits
// demo's predictions) are shown in full up to kTextFullIntegers values, longer ones as others.
constexpr size_t kTextPreview = 16;
constexpr size_t kTextFullIntegers = 256;

template <typename T>
T at(const HostTensor& t, size_t i) {
  return t.as<T>()[i];
}

}  // namespace

std::string format_element(const HostTensor& t, size_t i) {
  using namespace loom::apps;
  switch (t.dtype) {
    case LOOM_DTYPE_FLOAT32:
    case LOOM_DTYPE_FLOAT64:
    case LOOM_DTYPE_FLOAT16:
    case LOOM_DTYPE_BFLOAT16:
      return fmt::format("{:.6g}", element_as_double(t.dtype, t.data.data(), i));
    case LOOM_DTYPE_INT64:
      return fmt::format("{}", at<int64_t>(t, i));
    case LOOM_DTYPE_UINT64:
      return fmt::format("{}", at<uint64_t>(t, i));
    case LOOM_DTYPE_BOOL:
      return at<uint8_t>(t, i) ? "true" : "false";
    case LOOM_DTYPE_COMPLEX64:
      return fmt::format("({:.6g},{:.6g})", at<float>(t, 2 * i), at<float>(t, 2 * i + 1));
    case LOOM_DTYPE_COMPLEX128:
      return fmt::format("({:.6g},{:.6g})", at<double>(t, 2 * i), at<double>(t, 2 * i + 1));
    case LOOM_DTYPE_STRING:
      return JsonWriter::escape(t.strings[i]);
    default:
      if (dtype_is_integer(t.dtype))
        return fmt::format("{}",
                           static_cast<int64_t>(element_as_double(t.dtype, t.data.data(), i)));
      return "?";
  }
}

std::string format_text_report(const RunReport& r) {
  std::string out;
  for (size_t k = 0; k < r.outputs.size(); ++k) {
    const HostTensor& t = r.outputs[k];
    size_t count = t.element_count();
    bool show_all =
        loom::apps::dtype_is_integer(t.dtype) && t.dims.size() <= 1 && count <= kTextFullIntegers;
    size_t shown = show_all ? count : std::min(count, kTextPreview);
    std::vector<std::string> values;
    for (size_t i = 0; i < shown; ++i) values.push_back(format_element(t, i));
    std::string more = shown < count ? fmt::format(" ... ({} values)", count) : "";
    out += fmt::format("{}: {} {} = {}{}\n", r.output_names[k], loom::apps::dtype_name(t.dtype),
                       t.shape_string(), fmt::join(values, " "), more);
  }
  const LatencyStats& l = r.latency;
  out += fmt::format("load {:.2f} ms, session {:.2f} ms, first run {:.2f} ms\n", r.load_ms,
                     r.session_ms, r.first_run_ms);
  out += fmt::format(
      "latency over {} run{}: min {:.3f} ms, mean {:.3f} ms (sd {:.3f}), median {:.3f} ms, p90 "
      "{:.3f} ms, p99 {:.3f} ms, max {:.3f} ms; throughput {:.1f} inferences/s\n",
      l.runs, l.runs == 1 ? "" : "s", l.min_ms, l.mean_ms, l.stddev_ms, l.median_ms, l.p90_ms,
      l.p99_ms, l.max_ms, l.throughput_per_s);
  if (r.options->concurrency > 1)
    out += fmt::format("{} sessions ran at once, {} thread{} each\n", r.options->concurrency,
                       r.threads_per_session, r.threads_per_session == 1 ? "" : "s");
  if (!r.profile_trace.empty() || !r.profile_summary.empty()) {
    if (r.options->concurrency > 1)
      out += fmt::format("profiled: session 0 of {} (the others ran unprofiled beside it)\n",
                         r.options->concurrency);
    if (!r.profile_trace.empty())
      out += fmt::format(
          "profile trace: {} run{} written to {} (open it in "
          "https://ui.perfetto.dev or chrome://tracing)\n",
          r.profile_runs, r.profile_runs == 1 ? "" : "s", r.profile_trace);
    if (!r.profile_summary.empty()) out += "\n" + r.profile_summary;
  }
  return out;
}

}  // namespace loom::infer_run
