// Sequences and optionals through a whole session with the cpu device: sequence steps between
// device subgraphs, graph inputs and outputs of container type through Session::run_values and
// the public C API (loom_session_run_values), the tensor API's refusals, the .loom format's
// round trip, and errors that name the node.
#include <gtest/gtest.h>
#include <loom/loom.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "builder.hpp"
#include "model_loader.hpp"
#include "model_save.hpp"
#include "runtime.hpp"
#include "session.hpp"
#include "status.hpp"
#include "validate.hpp"

namespace loom::core {
namespace {

using Dims = std::vector<int64_t>;

// The cpu and loom plugins, errors only and swallowed.
loom_runtime_options_t quiet_cpu_options() {
  static const char* plugins[] = {LOOM_TEST_CPU_PLUGIN, LOOM_TEST_LOOM_PLUGIN};
  loom_runtime_options_t o{};
  o.struct_size = sizeof o;
  o.num_plugin_paths = 2;
  o.plugin_paths = plugins;
  o.log_level = LOOM_LOG_ERROR;
  o.log_fn = [](void*, loom_log_level_t, const char*, const char*) {};
  return o;
}

std::unique_ptr<Runtime> cpu_runtime() {
  return std::make_unique<Runtime>(quiet_cpu_options());
}

// Builds a model through the builder API the format plugins use, then validates it.
class ModelBuilder {
 public:
  ModelBuilder() {
    model_->graph = std::make_shared<Graph>();
    model_->graph->name = "main";
    b_.model = model_.get();
    b_.graph = model_->graph.get();
    ok(api().set_opset(&b_, "", 18));
  }
  static const loom_builder_api_t& api() { return *builder_api(); }
  static void ok(loom_status_t* s) {
    if (s) {
      std::string m = host_api_table()->status_message(s);
      host_api_table()->status_free(s);
      FAIL() << m;
    }
  }
  ModelBuilder& input(const char* name, loom_dtype_t dtype, Dims dims, uint32_t container = 0) {
    ok(api().add_input(&b_, name, dtype, static_cast<int32_t>(dims.size()), dims.data(), nullptr));
    if (container) ok(api().set_value_container(&b_, name, container));
    return *this;
  }
  ModelBuilder& output(const char* name, uint32_t container = 0) {
    ok(api().add_output(&b_, name, LOOM_DTYPE_UNDEFINED, -1, nullptr, nullptr));
    if (container) ok(api().set_value_container(&b_, name, container));
    return *this;
  }
  using Ints = std::vector<std::pair<const char*, int64_t>>;
  static void add(loom_graph_builder_t* b, const char* name, const char* op,
                  std::vector<const char*> in, std::vector<const char*> out, Ints ints = {}) {
    loom_node_builder_t* n = nullptr;
    ok(api().add_node(b, name, op, "", in.size(), in.data(), out.size(), out.data(), &n));
    for (auto [attr, value] : ints) ok(api().set_attr_int(n, attr, value));
  }
  ModelBuilder& node(const char* name, const char* op, std::vector<const char*> in,
                     std::vector<const char*> out, Ints ints = {}) {
    add(&b_, name, op, std::move(in), std::move(out), std::move(ints));
    return *this;
  }
  // A Loop node; returns the builder of its body.
  loom_graph_builder_t* loop(const char* name, std::vector<const char*> in,
                             std::vector<const char*> out) {
    loom_node_builder_t* n = nullptr;
    ok(api().add_node(&b_, name, "Loop", "", in.size(), in.data(), out.size(), out.data(), &n));
    loom_graph_builder_t* body = nullptr;
    ok(api().add_attr_graph(n, "body", &body));
    return body;
  }
  std::shared_ptr<Model> done(Runtime& rt) {
    validate_model(*model_, rt.schemas);
    return model_;
  }

 private:
  std::shared_ptr<Model> model_ = std::make_shared<Model>();
  loom_graph_builder_t b_;
};

HostValue float_tensor(const Dims& dims, float first) {
  HostValue v = allocate_host_value(LOOM_DTYPE_FLOAT32, dims);
  auto* p = static_cast<float*>(v.t.data);
  for (size_t i = 0; i < v.t.byte_size / sizeof(float); ++i) p[i] = first + static_cast<float>(i);
  return v;
}

HostValue int64_scalar(int64_t x) {
  HostValue v = allocate_host_value(LOOM_DTYPE_INT64, {});
  std::memcpy(v.t.data, &x, sizeof x);
  return v;
}

HostValue sequence(std::vector<HostValue> elements) {
  HostValue s;
  s.present = true;
  s.kind = ValueKind::kSequence;
  s.elem_dtype = LOOM_DTYPE_FLOAT32;
  s.elements = std::move(elements);
  return s;
}

std::vector<float> floats(const HostValue& v) {
  const auto* p = static_cast<const float*>(v.t.data);
  return {p, p + v.t.byte_size / sizeof(float)};
}

// Runs and keeps owned copies of the outputs (a tensor's bytes are valid during emit only).
std::vector<HostValue> run(Session& s, const std::vector<std::string>& names,
                           const std::vector<HostValue>& inputs) {
  std::vector<HostValue> out;
  s.run_values(names, inputs, [&](size_t, const HostValue& v) {
    if (!v.is_tensor()) {
      out.push_back(v);
      return;
    }
    HostValue copy = v;
    copy.owner = nullptr;
    out.push_back(owned_host_value(copy));
  });
  return out;
}

loom_session_options_t cpu_options() {
  loom_session_options_t o{};
  o.struct_size = sizeof o;
  o.devices = "cpu";
  o.threads = 1;
  return o;
}

// x -> Relu (cpu) -> SequenceInsert into the input sequence at `pos` -> SequenceAt(at) -> Neg
// (cpu): a sequence step between two device subgraphs, plus the sequence itself as an output.
std::shared_ptr<Model> insert_model(Runtime& rt) {
  return ModelBuilder()
      .input("x", LOOM_DTYPE_FLOAT32, {2})
      .input("seq", LOOM_DTYPE_FLOAT32, {2}, LOOM_VALUE_SEQUENCE)
      .input("pos", LOOM_DTYPE_INT64, {})
      .input("at", LOOM_DTYPE_INT64, {})
      .node("relu", "Relu", {"x"}, {"r"})
      .node("insert", "SequenceInsert", {"seq", "r", "pos"}, {"seq2"})
      .node("pick", "SequenceAt", {"seq2", "at"}, {"e"})
      .node("neg", "Neg", {"e"}, {"y"})
      .output("y")
      .output("seq2", LOOM_VALUE_SEQUENCE)
      .done(rt);
}

TEST(SequenceSession, StepsBetweenDeviceSubgraphs) {
  auto rt = cpu_runtime();
  ASSERT_TRUE(rt->find_device("cpu"))
      << "the cpu plugin did not load from " << LOOM_TEST_CPU_PLUGIN;
  Session s(*rt, insert_model(*rt), cpu_options());
  HostValue x = float_tensor({2}, -1);  // relu: {0, 0}
  std::vector<HostValue> out = run(s, {"x", "seq", "pos", "at"},
                                   {x, sequence({float_tensor({2}, 10), float_tensor({2}, 20)}),
                                    int64_scalar(-1), int64_scalar(1)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(floats(out[0]), (std::vector<float>{-0.f, -0.f}));  // Neg of the inserted Relu
  ASSERT_EQ(out[1].kind, ValueKind::kSequence);
  ASSERT_EQ(out[1].elements.size(), 3u);
  EXPECT_EQ(floats(out[1].elements[0]), (std::vector<float>{10, 11}));
  EXPECT_EQ(floats(out[1].elements[2]), (std::vector<float>{20, 21}));
  // A second run with another sequence length reuses the session.
  out = run(s, {"x", "seq", "pos", "at"},
            {float_tensor({2}, 3), sequence({}), int64_scalar(0), int64_scalar(0)});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{-3, -4}));
  EXPECT_EQ(out[1].elements.size(), 1u);
}

TEST(SequenceSession, RunErrorsNameTheNodeAndTheInput) {
  auto rt = cpu_runtime();
  Session s(*rt, insert_model(*rt), cpu_options());
  auto error = [&](const std::vector<HostValue>& inputs) -> std::string {
    try {
      run(s, {"x", "seq", "pos", "at"}, inputs);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  HostValue seq = sequence({float_tensor({2}, 0)});
  std::string e = error({float_tensor({2}, 0), seq, int64_scalar(5), int64_scalar(0)});
  EXPECT_NE(e.find("SequenceInsert node 'insert': position 5 is out of range"), std::string::npos)
      << e;
  e = error({float_tensor({2}, 0), seq, int64_scalar(0), int64_scalar(-3)});
  EXPECT_NE(e.find("SequenceAt node 'pick': position -3 is out of range"), std::string::npos) << e;
  // A tensor where the model takes a sequence, and a sequence of the wrong element type.
  e = error({float_tensor({2}, 0), float_tensor({2}, 0), int64_scalar(0), int64_scalar(0)});
  EXPECT_NE(e.find("input 'seq' is of type seq(tensor) in the model but a value of type tensor "
                   "was given"),
            std::string::npos)
      << e;
  HostValue ints = sequence({int64_scalar(1)});
  ints.elem_dtype = LOOM_DTYPE_INT64;
  e = error({float_tensor({2}, 0), ints, int64_scalar(0), int64_scalar(0)});
  EXPECT_NE(e.find("input 'seq' holds int64 tensors but the model expects float32"),
            std::string::npos)
      << e;
  // An element whose byte count does not match its shape.
  HostValue bad = float_tensor({2}, 0);
  bad.t.byte_size = 4;
  e = error({float_tensor({2}, 0), sequence({bad}), int64_scalar(0), int64_scalar(0)});
  EXPECT_NE(e.find("input 'seq' element 0 has 4 bytes of data"), std::string::npos) << e;
}

TEST(SequenceSession, TheTensorApiRefusesContainersWithAPointer) {
  auto rt = cpu_runtime();
  // Only tensors in and out, a sequence inside: the tensor API runs it.
  auto inner = ModelBuilder()
                   .input("x", LOOM_DTYPE_FLOAT32, {2, 3})
                   .node("split", "SplitToSequence", {"x"}, {"parts"}, {{"axis", 1}})
                   .node("len", "SequenceLength", {"parts"}, {"n"})
                   .node("cat", "ConcatFromSequence", {"parts"}, {"y"}, {{"axis", 0}})
                   .output("n")
                   .output("y")
                   .done(*rt);
  Session s(*rt, inner, cpu_options());
  HostValue x = float_tensor({2, 3}, 0);
  loom_host_tensor_t in{};
  in.struct_size = sizeof in;
  in.dtype = LOOM_DTYPE_FLOAT32;
  in.rank = 2;
  in.dims[0] = 2;
  in.dims[1] = 3;
  in.data = x.t.data;
  in.byte_size = x.t.byte_size;
  const char* names[] = {"x"};
  loom_host_tensor_t out[2]{};
  s.run(1, names, &in, 2, out);
  EXPECT_EQ(*static_cast<int64_t*>(out[0].data), 3);
  ASSERT_EQ(out[1].rank, 2);
  EXPECT_EQ(out[1].dims[0], 6);  // three [2,1] columns stacked along axis 0
  EXPECT_EQ(static_cast<float*>(out[1].data)[1], 3);
  for (auto& o : out) std::free(o.data);

  Session with_sequences(*rt, insert_model(*rt), cpu_options());
  HostValue two = float_tensor({2}, 0), zero = int64_scalar(0);
  loom_host_tensor_t ins[4]{};
  for (int i = 0; i < 4; ++i) {
    const HostValue& v = i < 2 ? two : zero;  // a tensor where the sequence belongs
    ins[i].struct_size = sizeof ins[i];
    ins[i].dtype = v.t.dtype;
    ins[i].rank = v.t.rank;
    for (int32_t d = 0; d < v.t.rank; ++d) ins[i].dims[d] = v.t.dims[d];
    ins[i].data = v.t.data;
    ins[i].byte_size = v.t.byte_size;
  }
  const char* all[] = {"x", "seq", "pos", "at"};
  try {
    with_sequences.run(4, all, ins, 2, out);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'seq' is of type seq(tensor) in the model but a "
                                         "value of type tensor was given (pass sequences and "
                                         "optionals with loom_session_run_values)"),
              std::string::npos)
        << e.what();
  }
}

TEST(SequenceSession, OptionalInputsTakeTheirContentOrNothing) {
  auto rt = cpu_runtime();
  auto model = ModelBuilder()
                   .input("maybe", LOOM_DTYPE_FLOAT32, {2}, LOOM_VALUE_OPTIONAL)
                   .node("has", "OptionalHasElement", {"maybe"}, {"h"})
                   .output("h")
                   .output("maybe", LOOM_VALUE_OPTIONAL)
                   .done(*rt);
  Session s(*rt, model, cpu_options());
  // A plain tensor for an optional(tensor) input is a present optional.
  std::vector<HostValue> out = run(s, {"maybe"}, {float_tensor({2}, 1)});
  EXPECT_EQ(*static_cast<uint8_t*>(out[0].t.data), 1);
  EXPECT_EQ(out[1].kind, ValueKind::kOptionalTensor);
  ASSERT_EQ(out[1].elements.size(), 1u);
  HostValue none;
  none.present = true;
  none.kind = ValueKind::kOptionalTensor;
  out = run(s, {"maybe"}, {none});
  EXPECT_EQ(*static_cast<uint8_t*>(out[0].t.data), 0);
  EXPECT_TRUE(out[1].elements.empty());
  // The tensor API cannot return the optional output, and says what to use instead.
  HostValue x = float_tensor({2}, 1);
  loom_host_tensor_t in{};
  in.struct_size = sizeof in;
  in.dtype = LOOM_DTYPE_FLOAT32;
  in.rank = 1;
  in.dims[0] = 2;
  in.data = x.t.data;
  in.byte_size = x.t.byte_size;
  const char* names[] = {"maybe"};
  loom_host_tensor_t tensors_out[2]{};
  try {
    s.run(1, names, &in, 2, tensors_out);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "output 'maybe' is of type optional(tensor): read it with loom_session_run_values");
  }
}

TEST(SequenceSession, LoopCarriesASequence) {
  auto rt = cpu_runtime();
  // seq = []; for i in range(n): seq.append(x + i)   (a Loop carrying a sequence, whose body
  // mixes a device op, Add, with a sequence step)
  ModelBuilder mb;
  mb.input("n", LOOM_DTYPE_INT64, {})
      .input("x", LOOM_DTYPE_FLOAT32, {2})
      .node("empty", "SequenceEmpty", {}, {"s0"});
  loom_graph_builder_t* body = mb.loop("loop", {"n", "", "s0"}, {"s"});
  const auto& api = ModelBuilder::api();
  Dims scalar;
  ModelBuilder::ok(api.add_input(body, "i", LOOM_DTYPE_INT64, 0, scalar.data(), nullptr));
  ModelBuilder::ok(api.add_input(body, "cond", LOOM_DTYPE_BOOL, 0, scalar.data(), nullptr));
  ModelBuilder::ok(api.add_input(body, "acc", LOOM_DTYPE_FLOAT32, -1, nullptr, nullptr));
  ModelBuilder::ok(api.set_value_container(body, "acc", LOOM_VALUE_SEQUENCE));
  ModelBuilder::add(body, "keep", "Identity", {"cond"}, {"cond_out"});
  ModelBuilder::add(body, "to_float", "Cast", {"i"}, {"fi"}, {{"to", LOOM_DTYPE_FLOAT32}});
  ModelBuilder::add(body, "add", "Add", {"x", "fi"}, {"xi"});
  ModelBuilder::add(body, "append", "SequenceInsert", {"acc", "xi"}, {"acc_out"});
  ModelBuilder::ok(api.add_output(body, "cond_out", LOOM_DTYPE_BOOL, 0, scalar.data(), nullptr));
  ModelBuilder::ok(api.add_output(body, "acc_out", LOOM_DTYPE_FLOAT32, -1, nullptr, nullptr));
  ModelBuilder::ok(api.set_value_container(body, "acc_out", LOOM_VALUE_SEQUENCE));
  mb.output("s", LOOM_VALUE_SEQUENCE);
  Session s(*rt, mb.done(*rt), cpu_options());
  std::vector<HostValue> out = run(s, {"n", "x"}, {int64_scalar(3), float_tensor({2}, 10)});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].kind, ValueKind::kSequence);
  ASSERT_EQ(out[0].elements.size(), 3u);
  EXPECT_EQ(floats(out[0].elements[0]), (std::vector<float>{10, 11}));
  EXPECT_EQ(floats(out[0].elements[2]), (std::vector<float>{12, 13}));
  // Zero trips: the initial (empty) sequence comes back.
  out = run(s, {"n", "x"}, {int64_scalar(0), float_tensor({2}, 10)});
  EXPECT_TRUE(out[0].elements.empty());
}

TEST(SequenceSession, TheLoomFormatKeepsSequenceInputsAndOutputs) {
  auto rt = cpu_runtime();
  auto model = insert_model(*rt);
  std::string path = (std::filesystem::temp_directory_path() /
                      ("loom_seq_" + std::to_string(::getpid()) + ".loom"))
                         .string();
  save_model(*rt, *model, "loom", path);
  std::shared_ptr<Model> loaded;
  try {
    loaded = load_model(*rt, path);
  } catch (...) {
    std::filesystem::remove(path);
    throw;
  }
  std::filesystem::remove(path);
  const Graph& g = *loaded->graph;
  EXPECT_EQ(g.values[g.find("seq")].kind, ValueKind::kSequence);
  EXPECT_EQ(g.values[g.find("seq")].dtype, LOOM_DTYPE_FLOAT32);
  EXPECT_EQ(g.values[g.find("seq2")].kind, ValueKind::kSequence);
  EXPECT_EQ(g.values[g.find("x")].kind, ValueKind::kTensor);
  Session s(*rt, loaded, cpu_options());
  std::vector<HostValue> out = run(
      s, {"x", "seq", "pos", "at"},
      {float_tensor({2}, 1), sequence({float_tensor({2}, 10)}), int64_scalar(0), int64_scalar(1)});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{-10, -11}));
  EXPECT_EQ(out[1].elements.size(), 2u);
}

// The public C API end to end: a .loom model with sequence input and output, its kinds, and
// loom_session_run_values with loom_value_t in and out.
TEST(SequenceSession, PublicApiRunsValues) {
  auto rt = cpu_runtime();
  std::string path = (std::filesystem::temp_directory_path() /
                      ("loom_seq_api_" + std::to_string(::getpid()) + ".loom"))
                         .string();
  save_model(*rt, *insert_model(*rt), "loom", path);
  const loom_runtime_options_t ro = quiet_cpu_options();
  loom_runtime_t* runtime = nullptr;
  ASSERT_EQ(loom_runtime_create(&ro, &runtime), nullptr);
  loom_model_t* model = nullptr;
  loom_status_t* st = loom_model_load(runtime, path.c_str(), &model);
  std::filesystem::remove(path);
  ASSERT_EQ(st, nullptr) << loom_status_message(st);
  EXPECT_EQ(loom_model_input_kind(model, 0), LOOM_VALUE_KIND_TENSOR);
  EXPECT_EQ(loom_model_input_kind(model, 1), LOOM_VALUE_KIND_SEQUENCE);
  EXPECT_EQ(loom_model_output_kind(model, 1), LOOM_VALUE_KIND_SEQUENCE);
  EXPECT_EQ(loom_model_input_kind(model, 99), LOOM_VALUE_KIND_TENSOR);
  loom_session_options_t so = cpu_options();
  loom_session_t* session = nullptr;
  ASSERT_EQ(loom_session_create(runtime, model, &so, &session), nullptr);

  HostValue x = float_tensor({2}, 1), e0 = float_tensor({2}, 10), pos = int64_scalar(-1),
            at = int64_scalar(0);
  auto host = [](const HostValue& v) {
    loom_host_tensor_t t{};
    t.struct_size = sizeof t;
    t.dtype = v.t.dtype;
    t.rank = v.t.rank;
    for (int32_t d = 0; d < v.t.rank; ++d) t.dims[d] = v.t.dims[d];
    t.data = v.t.data;
    t.byte_size = v.t.byte_size;
    return t;
  };
  loom_host_tensor_t tensors[4] = {host(x), host(e0), host(pos), host(at)};
  auto value = [](loom_value_kind_t kind, loom_host_tensor_t* t, size_t n) {
    loom_value_t v{};
    v.struct_size = sizeof v;
    v.kind = kind;
    v.elem_dtype = LOOM_DTYPE_FLOAT32;
    v.has_value = true;
    v.num_tensors = n;
    v.tensors = t;
    return v;
  };
  loom_value_t inputs[4] = {value(LOOM_VALUE_KIND_TENSOR, &tensors[0], 1),
                            value(LOOM_VALUE_KIND_SEQUENCE, &tensors[1], 1),
                            value(LOOM_VALUE_KIND_TENSOR, &tensors[2], 1),
                            value(LOOM_VALUE_KIND_TENSOR, &tensors[3], 1)};
  const char* names[] = {"x", "seq", "pos", "at"};
  loom_value_t outputs[2]{};
  ASSERT_EQ(loom_session_run_values(session, 4, names, inputs, 2, outputs), nullptr);
  EXPECT_EQ(outputs[0].kind, LOOM_VALUE_KIND_TENSOR);
  ASSERT_EQ(outputs[0].num_tensors, 1u);
  EXPECT_EQ(static_cast<float*>(outputs[0].tensors[0].data)[1],
            -2);  // Neg(Relu(x))[1] inserted first
  EXPECT_EQ(outputs[1].kind, LOOM_VALUE_KIND_SEQUENCE);
  EXPECT_EQ(outputs[1].elem_dtype, LOOM_DTYPE_FLOAT32);
  ASSERT_EQ(outputs[1].num_tensors, 2u);
  EXPECT_EQ(static_cast<float*>(outputs[1].tensors[1].data)[0], 10);
  for (auto& o : outputs) loom_value_release(&o);
  EXPECT_EQ(outputs[1].tensors, nullptr);

  // An error (a sequence input declared as a tensor value with two tensors) leaves no output
  // to release.
  inputs[1] = value(LOOM_VALUE_KIND_TENSOR, &tensors[1], 2);
  st = loom_session_run_values(session, 4, names, inputs, 2, outputs);
  ASSERT_NE(st, nullptr);
  EXPECT_NE(std::string(loom_status_message(st)).find("input 'seq' is a tensor value with 2"),
            std::string::npos)
      << loom_status_message(st);
  loom_status_free(st);
  loom_session_destroy(session);
  loom_model_free(model);
  loom_runtime_destroy(runtime);
}

}  // namespace
}  // namespace loom::core
