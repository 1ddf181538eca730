#include "loom_test_support.hpp"

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace loom::loomfmt::testing {

std::string onnx_plugin() {
  return LOOM_TEST_ONNX_PLUGIN;
}
std::string loom_plugin() {
  return LOOM_TEST_LOOM_PLUGIN;
}
std::string cpu_plugin() {
  return LOOM_TEST_CPU_PLUGIN;
}

loom::apps::RuntimePtr make_runtime(const std::vector<std::string>& plugins) {
  std::vector<std::string> files = plugins;
  if (files.empty()) files = {onnx_plugin(), loom_plugin(), cpu_plugin()};
  std::vector<const char*> paths;
  for (const std::string& f : files) paths.push_back(f.c_str());
  loom_runtime_options_t o{};
  o.struct_size = sizeof o;
  o.num_plugin_paths = paths.size();
  o.plugin_paths = paths.data();
  o.log_level = LOOM_LOG_ERROR;
  return loom::apps::create_runtime(o);
}

std::string take_error(loom_status_t* status) {
  if (!status) return "";
  std::string text = std::to_string(loom_status_code(status)) + ": " + loom_status_message(status);
  loom_status_free(status);
  return text;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

TempDir::TempDir() {
  std::random_device rd;
  path_ = std::filesystem::temp_directory_path() /
          ("loom-format-test-" + std::to_string(rd()) + std::to_string(rd()));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string convert(loom_runtime_t* runtime, const std::string& in, const std::string& out,
                    bool simplify) {
  loom_model_t* model = nullptr;
  std::string err = take_error(loom_model_load(runtime, in.c_str(), &model));
  if (!err.empty()) return "load: " + err;
  loom::apps::ModelPtr owned(model);
  if (simplify) {
    err = take_error(loom_model_simplify(runtime, model, nullptr));
    if (!err.empty()) return "simplify: " + err;
  }
  err = take_error(loom_model_save(runtime, model, "loom", out.c_str()));
  return err.empty() ? "" : "save: " + err;
}

std::vector<loom::apps::HostTensor> run_cpu(loom_runtime_t* runtime, loom_model_t* model,
                                            const std::vector<loom::apps::HostTensor>& inputs) {
  loom_session_options_t so{};
  so.struct_size = sizeof so;
  so.devices = "cpu";
  so.threads = 1;
  auto session = loom::apps::create_session(runtime, model, so);
  auto infos = loom::apps::model_inputs(model);
  std::vector<std::string> names;
  std::vector<const loom::apps::HostTensor*> ptrs;
  for (size_t i = 0; i < inputs.size() && i < infos.size(); ++i) {
    names.push_back(infos[i].name);
    ptrs.push_back(&inputs[i]);
  }
  return loom::apps::run_session(session.get(), loom_model_num_outputs(model), names, ptrs);
}

std::string compare_exact(const loom::apps::HostTensor& a, const loom::apps::HostTensor& b) {
  if (a.dtype != b.dtype) return "dtypes differ";
  if (a.dims != b.dims) return "shapes differ: " + a.shape_string() + " vs " + b.shape_string();
  if (a.data != b.data) return "element bytes differ";
  if (a.strings != b.strings) return "strings differ";
  return "";
}

::onnx::ModelProto new_model(int64_t opset) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("loom-format-test");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  m.mutable_graph()->set_name("main");
  return m;
}

void add_value(::onnx::ValueInfoProto* v, const std::string& name, int32_t elem_type,
               const std::vector<int64_t>& dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  auto* shape = t->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

::onnx::NodeProto* add_node(::onnx::GraphProto* g, const std::string& op,
                            const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(op + "_" + std::to_string(g->node_size()));
  for (const auto& s : inputs) n->add_input(s);
  for (const auto& s : outputs) n->add_output(s);
  return n;
}

void add_float_initializer(::onnx::GraphProto* g, const std::string& name,
                           const std::vector<int64_t>& dims, const std::vector<float>& values) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(
      std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
}

void save_onnx(const ::onnx::ModelProto& model, const std::filesystem::path& path) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw std::runtime_error("cannot serialize the model");
  write_file(path, bytes);
}

loom::apps::HostTensor float_tensor(const std::vector<int64_t>& dims,
                                    const std::vector<float>& values) {
  loom::apps::HostTensor t;
  t.dtype = LOOM_DTYPE_FLOAT32;
  t.dims = dims;
  t.data.resize(values.size() * sizeof(float));
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

}  // namespace loom::loomfmt::testing
