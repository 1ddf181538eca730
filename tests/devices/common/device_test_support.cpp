#include "device_test_support.hpp"

#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <loom/half.hpp>
#include <loom/loom.hpp>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>

namespace loom::device_testing {
namespace {

bool is_float(loom_dtype_t t) {
  return t == LOOM_DTYPE_FLOAT32 || t == LOOM_DTYPE_FLOAT64 || t == LOOM_DTYPE_FLOAT16 ||
         t == LOOM_DTYPE_BFLOAT16;
}

using sdk::bfloat16_to_float;
using sdk::float_to_bfloat16;
using sdk::float_to_half;
using sdk::half_to_float;

// Element i of a numeric tensor as a double (for comparison and messages).
double element(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case LOOM_DTYPE_FLOAT32:
      return t.data<float>()[i];
    case LOOM_DTYPE_FLOAT64:
      return t.data<double>()[i];
    case LOOM_DTYPE_FLOAT16:
      return half_to_float(t.data<uint16_t>()[i]);
    case LOOM_DTYPE_BFLOAT16:
      return bfloat16_to_float(t.data<uint16_t>()[i]);
    case LOOM_DTYPE_INT8:
      return t.data<int8_t>()[i];
    case LOOM_DTYPE_UINT8:
      return t.data<uint8_t>()[i];
    case LOOM_DTYPE_BOOL:
      return t.data<uint8_t>()[i];
    case LOOM_DTYPE_INT16:
      return t.data<int16_t>()[i];
    case LOOM_DTYPE_UINT16:
      return t.data<uint16_t>()[i];
    case LOOM_DTYPE_INT32:
      return t.data<int32_t>()[i];
    case LOOM_DTYPE_UINT32:
      return t.data<uint32_t>()[i];
    case LOOM_DTYPE_INT64:
      return static_cast<double>(t.data<int64_t>()[i]);
    case LOOM_DTYPE_UINT64:
      return static_cast<double>(t.data<uint64_t>()[i]);
    default:
      throw std::runtime_error("device_test_support: unsupported dtype in comparison");
  }
}

void set_element(Tensor& t, int64_t i, double v) {
  switch (t.dtype) {
    case LOOM_DTYPE_FLOAT32:
      t.data<float>()[i] = static_cast<float>(v);
      break;
    case LOOM_DTYPE_FLOAT64:
      t.data<double>()[i] = v;
      break;
    case LOOM_DTYPE_FLOAT16:
      t.data<uint16_t>()[i] = float_to_half(static_cast<float>(v));
      break;
    case LOOM_DTYPE_BFLOAT16:
      t.data<uint16_t>()[i] = float_to_bfloat16(static_cast<float>(v));
      break;
    case LOOM_DTYPE_INT8:
      t.data<int8_t>()[i] = static_cast<int8_t>(std::lround(v));
      break;
    case LOOM_DTYPE_UINT8:
      t.data<uint8_t>()[i] = static_cast<uint8_t>(std::lround(v));
      break;
    case LOOM_DTYPE_BOOL:
      t.data<uint8_t>()[i] = v >= 0.5 ? 1 : 0;
      break;
    case LOOM_DTYPE_INT16:
      t.data<int16_t>()[i] = static_cast<int16_t>(std::lround(v));
      break;
    case LOOM_DTYPE_UINT16:
      t.data<uint16_t>()[i] = static_cast<uint16_t>(std::lround(v));
      break;
    case LOOM_DTYPE_INT32:
      t.data<int32_t>()[i] = static_cast<int32_t>(std::lround(v));
      break;
    case LOOM_DTYPE_UINT32:
      t.data<uint32_t>()[i] = static_cast<uint32_t>(std::lround(v));
      break;
    case LOOM_DTYPE_INT64:
      t.data<int64_t>()[i] = std::llround(v);
      break;
    case LOOM_DTYPE_UINT64:
      t.data<uint64_t>()[i] = static_cast<uint64_t>(std::llround(v));
      break;
    default:
      throw std::runtime_error("device_test_support: unsupported dtype for random data");
  }
}

Tensor make_tensor(loom_dtype_t dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  size_t size = loom_dtype_size(dtype);
  if (size == 0) throw std::runtime_error("device_test_support: dtype has no fixed size");
  t.bytes.assign(static_cast<size_t>(t.elements()) * size, 0);
  return t;
}

const loom::Runtime& shared_runtime() {
  // One runtime per test process: loading plugins is the slow part of a test.
  static const loom::Runtime runtime({plugin_dir()}, /*default_paths=*/false);
  return runtime;
}

}  // namespace

int64_t Tensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

loom_host_tensor_t Tensor::view() const {
  loom_host_tensor_t t{};
  t.struct_size = sizeof t;
  t.dtype = dtype;
  t.rank = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) t.dims[i] = shape[i];
  t.data = const_cast<uint8_t*>(bytes.data());  // borrowed, read-only by contract
  t.byte_size = bytes.size();
  return t;
}

Tensor random_tensor(loom_dtype_t dtype, std::vector<int64_t> shape, uint32_t seed, double low,
                     double high) {
  Tensor t = make_tensor(dtype, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(low, high);
  for (int64_t i = 0; i < t.elements(); ++i) set_element(t, i, dist(rng));
  return t;
}

Tensor float_tensor(std::vector<int64_t> shape, std::vector<float> values) {
  Tensor t = make_tensor(LOOM_DTYPE_FLOAT32, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.elements())
    throw std::runtime_error("float_tensor: value count does not match the shape");
  if (!t.bytes.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

Tensor int64_tensor(std::vector<int64_t> shape, std::vector<int64_t> values) {
  Tensor t = make_tensor(LOOM_DTYPE_INT64, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.elements())
    throw std::runtime_error("int64_tensor: value count does not match the shape");
  if (!t.bytes.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

NodeRef& NodeRef::i(const std::string& name, int64_t value) {
  auto* a = node_->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(value);
  return *this;
}

NodeRef& NodeRef::f(const std::string& name, float value) {
  auto* a = node_->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(value);
  return *this;
}

NodeRef& NodeRef::s(const std::string& name, const std::string& value) {
  auto* a = node_->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(value);
  return *this;
}

NodeRef& NodeRef::ints(const std::string& name, std::vector<int64_t> values) {
  auto* a = node_->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
  return *this;
}

NodeRef& NodeRef::floats(const std::string& name, std::vector<float> values) {
  auto* a = node_->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOATS);
  for (float v : values) a->add_floats(v);
  return *this;
}

NodeRef& NodeRef::domain(const std::string& domain) {
  node_->set_domain(domain);
  return *this;
}

std::vector<int64_t> gemm_input_shape(const GemmShape& g) {
  return g.trans_a ? std::vector<int64_t>{g.k, g.m} : std::vector<int64_t>{g.m, g.k};
}

ModelBuilder gemm_model(const GemmShape& g, uint32_t b_seed, uint32_t c_seed) {
  ModelBuilder m;
  m.input("a", LOOM_DTYPE_FLOAT32, gemm_input_shape(g));
  std::vector<int64_t> b =
      g.trans_b ? std::vector<int64_t>{g.n, g.k} : std::vector<int64_t>{g.k, g.n};
  m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, b, b_seed));
  std::vector<std::string> inputs{"a", "b"};
  if (!g.c.empty()) {
    m.initializer("c", random_tensor(LOOM_DTYPE_FLOAT32, g.c, c_seed));
    inputs.push_back("c");
  }
  m.node("Gemm", inputs, {"y"})
      .i("transA", g.trans_a)
      .i("transB", g.trans_b)
      .f("alpha", g.alpha)
      .f("beta", g.beta);
  m.output("y");
  return m;
}

ModelBuilder::ModelBuilder(int64_t opset) {
  model_.set_ir_version(8);
  model_.set_producer_name("loom-device-tests");
  auto* op = model_.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  model_.mutable_graph()->set_name("main");
}

ModelBuilder& ModelBuilder::opset(const std::string& domain, int64_t version) {
  for (auto& op : *model_.mutable_opset_import()) {
    if (op.domain() == domain) {
      op.set_version(version);
      return *this;
    }
  }
  auto* op = model_.add_opset_import();
  op->set_domain(domain);
  op->set_version(version);
  return *this;
}

ModelBuilder& ModelBuilder::input(const std::string& name, loom_dtype_t dtype,
                                  std::vector<int64_t> dims) {
  auto* v = model_.mutable_graph()->add_input();
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(static_cast<int32_t>(dtype));  // loom's dtype enum is ONNX's numbering
  auto* shape = t->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d >= 0) {
      dim->set_dim_value(d);
    } else {
      dim->set_dim_param("d" + std::to_string(symbolic_++));
    }
  }
  return *this;
}

ModelBuilder& ModelBuilder::output(const std::string& name) {
  model_.mutable_graph()->add_output()->set_name(name);
  return *this;
}

ModelBuilder& ModelBuilder::initializer(const std::string& name, const Tensor& value) {
  auto* t = model_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(static_cast<int32_t>(value.dtype));
  for (int64_t d : value.shape) t->add_dims(d);
  // raw_data is little-endian, as the host stores it on every machine Loom builds for.
  t->set_raw_data(std::string(value.bytes.begin(), value.bytes.end()));
  return *this;
}

NodeRef ModelBuilder::node(const std::string& op, std::vector<std::string> inputs,
                           std::vector<std::string> outputs, const std::string& name) {
  auto* n = model_.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name.empty() ? op + "_" + std::to_string(model_.graph().node_size()) : name);
  for (auto& i : inputs) n->add_input(i);
  for (auto& o : outputs) n->add_output(o);
  return NodeRef(n);
}

std::filesystem::path ModelBuilder::save() const {
  static std::atomic<int> counter{0};
  const char* tmp = std::getenv("TMPDIR");
  std::filesystem::path dir = tmp && *tmp ? tmp : "/tmp";
  // pid + counter: ctest runs the cases of one binary in parallel processes.
  std::filesystem::path path = dir / ("loom-device-test-" + std::to_string(::getpid()) + "-" +
                                      std::to_string(counter++) + ".onnx");
  std::ofstream out(path, std::ios::binary);
  if (!model_.SerializeToOstream(&out) || !out.flush())
    throw std::runtime_error("cannot write the test model " + path.string());
  return path;
}

std::vector<Tensor> run_model(const std::filesystem::path& model_path,
                              const std::vector<std::pair<std::string, Tensor>>& inputs,
                              const RunOptions& options) {
  return run_model(shared_runtime().get(), model_path, inputs, options);
}

namespace {

struct LogCapture {
  std::string source;
  std::mutex mutex;
  std::vector<std::string> messages;
};

void capture_log(void* user, loom_log_level_t, const char* source, const char* message) {
  auto* log = static_cast<LogCapture*>(user);
  std::lock_guard<std::mutex> lock(log->mutex);
  if (log->source == source) log->messages.push_back(message);
}

}  // namespace

using RuntimeHandle = std::unique_ptr<loom_runtime_t, void (*)(loom_runtime_t*)>;

// The session options of `options` (its strings must outlive the returned struct).
static loom_session_options_t session_options(const RunOptions& options) {
  loom_session_options_t o{};
  o.struct_size = sizeof o;
  o.devices = options.devices.c_str();
  o.threads = options.threads;
  o.no_fallback = options.no_fallback;
  o.device_options = options.device_options.c_str();
  return o;
}

// A runtime of the build's plugins whose debug log goes to `log`.
static RuntimeHandle capturing_runtime(LogCapture& log) {
  const std::string dir = plugin_dir();
  const char* paths[] = {dir.c_str()};
  loom_runtime_options_t ro{};
  ro.struct_size = sizeof ro;
  ro.num_plugin_paths = 1;
  ro.plugin_paths = paths;
  ro.log_level = LOOM_LOG_DEBUG;
  ro.log_fn = capture_log;
  ro.log_user = &log;
  loom_runtime_t* raw_runtime = nullptr;
  loom::check(loom_runtime_create(&ro, &raw_runtime));
  return RuntimeHandle(raw_runtime, loom_runtime_destroy);
}

std::vector<std::string> run_model_capturing_log(
    const ModelBuilder& model, const std::vector<std::pair<std::string, Tensor>>& inputs,
    const RunOptions& options, const std::string& source) {
  LogCapture log;
  log.source = source;
  RuntimeHandle runtime = capturing_runtime(log);
  const auto path = model.save();
  try {
    run_model(runtime.get(), path, inputs, options);
  } catch (...) {
    std::filesystem::remove(path);
    throw;
  }
  std::filesystem::remove(path);
  return std::move(log.messages);
}

std::vector<std::string> run_model_capturing_log(
    const ModelBuilder& model, const std::vector<std::vector<std::pair<std::string, Tensor>>>& runs,
    const RunOptions& options, const std::string& source) {
  LogCapture log;
  log.source = source;
  RuntimeHandle runtime = capturing_runtime(log);
  const auto path = model.save();
  {
    ModelHandle handle = load_model(runtime.get(), path);
    std::filesystem::remove(path);
    TestSession session = open_session(runtime.get(), handle.get(), session_options(options));
    for (const auto& inputs : runs) session.run(inputs);
  }
  return std::move(log.messages);
}

std::vector<Tensor> run_model(loom_runtime_t* runtime, const std::filesystem::path& model_path,
                              const std::vector<std::pair<std::string, Tensor>>& inputs,
                              const RunOptions& options) {
  loom_model_t* raw_model = nullptr;
  loom::check(loom_model_load(runtime, model_path.string().c_str(), &raw_model));
  std::unique_ptr<loom_model_t, void (*)(loom_model_t*)> model(raw_model, loom_model_free);
  const loom_session_options_t o = session_options(options);
  loom_session_t* raw_session = nullptr;
  loom::check(loom_session_create(runtime, model.get(), &o, &raw_session));
  std::unique_ptr<loom_session_t, void (*)(loom_session_t*)> session(raw_session,
                                                                     loom_session_destroy);
  // As applications should: the session is then the only owner of the weights, and those a
  // device copies at compile are freed while it compiles (under AddressSanitizer, a device that
  // still read them would be caught).
  const size_t num_outputs = loom_model_num_outputs(model.get());
  model.reset();

  return run_session(session.get(), num_outputs, inputs);
}

void expect_outputs_match(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(compare(got[i], want[i]), "") << "output " << i;
}

ModelHandle load_model(loom_runtime_t* runtime, const std::filesystem::path& path) {
  loom_model_t* raw = nullptr;
  loom::check(loom_model_load(runtime, path.string().c_str(), &raw));
  return ModelHandle(raw, loom_model_free);
}

std::vector<Tensor> TestSession::run(const std::vector<std::pair<std::string, Tensor>>& inputs) {
  return run_session(handle.get(), num_outputs, inputs);
}

long long TestSession::plan_number(const std::string& field) {
  char* json = nullptr;
  loom::check(loom_session_plan_json(handle.get(), &json));
  std::string text = json;
  loom_string_free(json);
  const std::string key = "\"" + field + "\":";
  size_t at = text.find(key);
  if (at == std::string::npos) {
    ADD_FAILURE() << field << " is not in the plan: " << text;
    return -1;
  }
  return std::atoll(text.c_str() + at + key.size());
}

loom_plan_cache_stats_t TestSession::cache_stats() {
  loom_plan_cache_stats_t stats{};
  stats.struct_size = sizeof stats;
  loom::check(loom_session_plan_cache_stats(handle.get(), &stats));
  return stats;
}

std::string TestSession::plan_json() {
  char* json = nullptr;
  loom::check(loom_session_plan_json(handle.get(), &json));
  std::string text = json;
  loom_string_free(json);
  return text;
}

TestSession open_session(loom_runtime_t* runtime, loom_model_t* model, const char* devices,
                         const char* placements, const char* device_options) {
  loom_session_options_t o{};
  o.struct_size = sizeof o;
  o.devices = devices;
  o.placements = placements;
  o.device_options = device_options;
  return open_session(runtime, model, o);
}

TestSession open_session(loom_runtime_t* runtime, loom_model_t* model,
                         const loom_session_options_t& o) {
  loom_session_t* raw = nullptr;
  loom::check(loom_session_create(runtime, model, &o, &raw));
  TestSession s;
  s.handle.reset(raw);
  s.num_outputs = loom_model_num_outputs(model);
  return s;
}

std::vector<Tensor> run_session(loom_session_t* session, size_t num_outputs,
                                const std::vector<std::pair<std::string, Tensor>>& inputs) {
  std::vector<const char*> names;
  std::vector<loom_host_tensor_t> views;
  for (const auto& [name, tensor] : inputs) {
    names.push_back(name.c_str());
    views.push_back(tensor.view());
  }
  std::vector<loom::HostTensor> outputs(num_outputs);
  std::vector<loom_host_tensor_t> raw(num_outputs);
  for (auto& r : raw) r.struct_size = sizeof r;
  loom::check(
      loom_session_run(session, names.size(), names.data(), views.data(), raw.size(), raw.data()));
  for (size_t i = 0; i < raw.size(); ++i) *outputs[i].raw() = raw[i];

  std::vector<Tensor> result;
  for (auto& out : outputs) {
    Tensor t;
    t.dtype = out.dtype();
    t.shape = out.shape();
    const auto* bytes = out.data<uint8_t>();
    t.bytes.assign(bytes, bytes + out.byte_size());
    result.push_back(std::move(t));
  }
  return result;
}

Tolerance default_tolerance(loom_dtype_t dtype) {
  switch (dtype) {
    // f32: devices reorder sums (blocked GEMM, Winograd, tree reductions), so a relative 1e-4
    // plus an absolute floor for values that cancel to near zero.
    case LOOM_DTYPE_FLOAT32:
      return {1e-4, 1e-5};
    case LOOM_DTYPE_FLOAT64:
      return {1e-10, 1e-12};
    // 11-bit and 8-bit mantissas, accumulated in f32 by every device.
    case LOOM_DTYPE_FLOAT16:
      return {5e-3, 1e-3};
    case LOOM_DTYPE_BFLOAT16:
      return {2e-2, 1e-2};
    default:
      return {0, 0};  // integers and bool are exact
  }
}

Tolerance reduced_precision_tolerance(loom_dtype_t storage) {
  switch (storage) {
    // Each stored value carries a relative error up to 2^-11; a few roundings in a row, and
    // dot products of a few hundred rounded terms, stay within 1e-2.
    case LOOM_DTYPE_FLOAT16:
      return {1e-2, 1e-2};
    case LOOM_DTYPE_BFLOAT16:
      return {6e-2, 6e-2};
    default:
      return default_tolerance(storage);
  }
}

std::string compare(const Tensor& actual, const Tensor& expected, Tolerance tol) {
  std::ostringstream out;
  if (actual.dtype != expected.dtype) {
    out << "dtype " << actual.dtype << " != expected " << expected.dtype;
    return out.str();
  }
  if (actual.shape != expected.shape) {
    out << "shape [";
    for (auto d : actual.shape) out << d << ",";
    out << "] != expected [";
    for (auto d : expected.shape) out << d << ",";
    out << "]";
    return out.str();
  }
  if (actual.dtype == LOOM_DTYPE_STRING) {
    return actual.bytes == expected.bytes ? "" : "string tensors differ";
  }
  int64_t bad = 0;
  for (int64_t i = 0; i < actual.elements(); ++i) {
    double a = element(actual, i), e = element(expected, i);
    bool ok;
    if (is_float(actual.dtype)) {
      ok = (std::isnan(a) && std::isnan(e)) || (a == e) ||
           std::abs(a - e) <= tol.atol + tol.rtol * std::abs(e);
    } else {
      ok = a == e;
    }
    if (!ok) {
      if (bad < 5) out << "[" << i << "] " << a << " vs expected " << e << "; ";
      ++bad;
    }
  }
  if (bad == 0) return "";
  out << bad << " of " << actual.elements() << " elements differ (rtol " << tol.rtol << ", atol "
      << tol.atol << ")";
  return out.str();
}

std::string compare(const Tensor& actual, const Tensor& expected) {
  return compare(actual, expected, default_tolerance(expected.dtype));
}

std::vector<Tensor> expect_matches_cpu(const ModelBuilder& model,
                                       const std::vector<std::pair<std::string, Tensor>>& inputs,
                                       const RunOptions& options, const Tolerance* tolerance) {
  std::filesystem::path path = model.save();
  struct Remove {
    std::filesystem::path p;
    ~Remove() { std::filesystem::remove(p); }
  } remove{path};
  RunOptions reference;
  reference.devices = "cpu";
  reference.threads = 1;
  std::vector<Tensor> expected = run_model(path, inputs, reference);
  std::vector<Tensor> actual = run_model(path, inputs, options);
  EXPECT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
    Tolerance tol = tolerance ? *tolerance : default_tolerance(expected[i].dtype);
    std::string problem = compare(actual[i], expected[i], tol);
    EXPECT_EQ(problem, "") << "output " << i << " on " << options.devices << " vs cpu";
  }
  return actual;
}

std::string plugin_dir() {
  const char* dir = std::getenv("LOOM_TEST_PLUGIN_DIR");
  if (dir && *dir) return dir;
#ifdef LOOM_TEST_PLUGIN_DIR_DEFAULT
  return LOOM_TEST_PLUGIN_DIR_DEFAULT;
#else
  throw std::runtime_error("LOOM_TEST_PLUGIN_DIR is not set");
#endif
}

size_t heap_in_use() {
  struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

}  // namespace loom::device_testing
