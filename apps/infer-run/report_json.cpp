#include <fmt/format.h>

#include <cmath>
#include <loom_apps/api.hpp>
#include <loom_apps/dtype.hpp>
#include <loom_apps/json_writer.hpp>

#include "report.hpp"

namespace loom::infer_run {
namespace {

using loom::apps::HostTensor;
using loom::apps::JsonWriter;

void write_shape(JsonWriter& w, const std::vector<int64_t>& dims) {
  w.begin_array();
  for (int64_t d : dims) w.value(d);
  w.end_array();
}

void write_element(JsonWriter& w, const HostTensor& t, size_t i) {
  switch (t.dtype) {
    case LOOM_DTYPE_INT64:
      w.value(t.as<int64_t>()[i]);
      return;
    case LOOM_DTYPE_UINT64:
      w.value(t.as<uint64_t>()[i]);
      return;
    case LOOM_DTYPE_BOOL:
      w.value(t.as<uint8_t>()[i] != 0);
      return;
    case LOOM_DTYPE_STRING:
      w.value(t.strings[i]);
      return;
    case LOOM_DTYPE_COMPLEX64:
      w.begin_array().value(static_cast<double>(t.as<float>()[2 * i]));
      w.value(static_cast<double>(t.as<float>()[2 * i + 1])).end_array();
      return;
    case LOOM_DTYPE_COMPLEX128:
      w.begin_array().value(t.as<double>()[2 * i]).value(t.as<double>()[2 * i + 1]).end_array();
      return;
    case LOOM_DTYPE_FLOAT32: {
      // Through float's own shortest form, so 0.1f prints as 0.1 rather than 0.100000001.
      float v = t.as<float>()[i];
      if (std::isfinite(v))
        w.raw(fmt::format("{}", v));
      else
        w.value(static_cast<double>(v));
      return;
    }
    default: {
      double v = loom::apps::element_as_double(t.dtype, t.data.data(), i);
      if (loom::apps::dtype_is_integer(t.dtype))
        w.value(static_cast<int64_t>(v));
      else
        w.value(v);
    }
  }
}

void write_io_list(JsonWriter& w, const std::vector<loom_io_info_t>& list) {
  w.begin_array();
  for (const auto& io : list) {
    w.begin_object().key("name").value(io.name);
    w.key("dtype").value(loom::apps::dtype_name(io.dtype));
    w.key("shape");
    if (io.rank < 0) {
      w.null();
    } else {
      w.begin_array();
      for (int32_t d = 0; d < io.rank && d < LOOM_MAX_RANK; ++d) {
        if (io.dims[d] >= 0)
          w.value(io.dims[d]);
        else if (io.dim_params[d] != nullptr && *io.dim_params[d])
          w.value(io.dim_params[d]);
        else
          w.null();
      }
      w.end_array();
    }
    w.end_object();
  }
  w.end_array();
}

}  // namespace

std::string model_summary_json(const Options& options, const loom_model_t* model) {
  JsonWriter w;
  w.begin_object();
  w.key("path").value(options.model);
  w.key("format").value(loom_model_format(model));
  w.key("nodes").value(static_cast<uint64_t>(loom_model_num_nodes(model)));
  w.key("initializers").value(static_cast<uint64_t>(loom_model_num_initializers(model)));
  w.key("metadata").begin_object();
  for (size_t i = 0; i < loom_model_num_metadata(model); ++i) {
    const char* key = nullptr;
    const char* value = nullptr;
    loom_model_metadata(model, i, &key, &value);
    w.key(key ? key : "").value(value ? value : "");
  }
  w.end_object();
  w.key("inputs");
  write_io_list(w, loom::apps::model_inputs(model));
  w.key("outputs");
  write_io_list(w, loom::apps::model_outputs(model));
  w.end_object();
  return w.str();
}

std::string format_json_report(const RunReport& r) {
  JsonWriter w;
  w.begin_object();

  w.key("model").raw(r.model_json);

  w.key("devices").begin_array();
  std::string_view devices = r.options->devices;
  while (!devices.empty()) {
    size_t comma = devices.find(',');
    w.value(devices.substr(0, comma));
    devices = comma == std::string_view::npos ? "" : devices.substr(comma + 1);
  }
  w.end_array();
  w.key("no_fallback").value(r.options->no_fallback);

  w.key("inputs").begin_object();
  for (const auto& feed : *r.inputs) {
    w.key(feed.name).begin_object();
    w.key("dtype").value(loom::apps::dtype_name(feed.tensor.dtype));
    w.key("shape");
    write_shape(w, feed.tensor.dims);
    w.key("source").value(feed.source);
    w.end_object();
  }
  w.end_object();

  w.key("outputs").begin_object();
  for (size_t k = 0; k < r.outputs.size(); ++k) {
    const HostTensor& t = r.outputs[k];
    w.key(r.output_names[k]).begin_object();
    w.key("dtype").value(loom::apps::dtype_name(t.dtype));
    w.key("shape");
    write_shape(w, t.dims);
    size_t count = t.element_count();
    w.key("elements").value(static_cast<uint64_t>(count));
    if (count <= r.options->json_max_values) {
      w.key("values").begin_array();
      for (size_t i = 0; i < count; ++i) write_element(w, t, i);
      w.end_array();
    }
    w.end_object();
  }
  w.end_object();

  w.key("load_ms").value(r.load_ms);
  w.key("session_ms").value(r.session_ms);
  w.key("first_run_ms").value(r.first_run_ms);
  w.key("latency_ms").begin_object();
  w.key("min").value(r.latency.min_ms).key("mean").value(r.latency.mean_ms);
  w.key("stddev").value(r.latency.stddev_ms).key("median").value(r.latency.median_ms);
  w.key("p90").value(r.latency.p90_ms).key("p99").value(r.latency.p99_ms);
  w.key("max").value(r.latency.max_ms);
  w.key("runs").value(static_cast<uint64_t>(r.latency.runs));
  w.key("warmup").value(r.options->warmup);
  w.key("wall").value(r.latency.wall_ms);
  w.end_object();
  w.key("throughput_per_s").value(r.latency.throughput_per_s);
  w.key("concurrency").value(r.options->concurrency);
  w.key("threads_per_session").value(r.threads_per_session);
  w.key("plan");
  if (r.plan_json.empty())
    w.null();
  else
    w.raw(r.plan_json);
  w.key("planned_peak_bytes").value(static_cast<uint64_t>(r.planned_peak_bytes));
  if (!r.profile_trace.empty()) w.key("profile_trace").value(r.profile_trace);
  if (!r.profile_json.empty()) w.key("profile").raw(r.profile_json);
  w.end_object();
  return w.str() + "\n";
}

}  // namespace loom::infer_run
