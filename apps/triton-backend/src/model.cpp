#include "model.hpp"

#include <algorithm>
#include <filesystem>
#include <memory>

#include "common.hpp"

namespace loom::triton {

namespace fs = std::filesystem;

BackendState::~BackendState() {
  if (runtime) loom_runtime_destroy(runtime);
}

namespace {

// A graph input or output of the Loom model.
struct ModelIo {
  std::string name;
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  int32_t rank = -1;          // -1: unknown
  std::vector<int64_t> dims;  // -1: dynamic
  loom_value_kind_t kind = LOOM_VALUE_KIND_TENSOR;
};

std::vector<ModelIo> model_ios(const loom_model_t* model, bool outputs) {
  size_t count = outputs ? loom_model_num_outputs(model) : loom_model_num_inputs(model);
  std::vector<ModelIo> ios;
  for (size_t i = 0; i < count; ++i) {
    loom_io_info_t info{};
    info.struct_size = sizeof info;
    check(outputs ? loom_model_output(model, i, &info) : loom_model_input(model, i, &info),
          "reading the model's inputs and outputs");
    ModelIo io;
    io.name = info.name ? info.name : "";
    io.dtype = info.dtype;
    io.rank = info.rank;
    if (info.rank > 0) io.dims.assign(info.dims, info.dims + info.rank);
    io.kind = outputs ? loom_model_output_kind(model, i) : loom_model_input_kind(model, i);
    ios.push_back(std::move(io));
  }
  return ios;
}

std::string describe(const ModelIo& io) {
  std::string type = config_dtype_name(io.dtype);
  if (type.empty()) type = loom_dtype_name(io.dtype);
  return io.name + " (" + type + " " + (io.rank < 0 ? "unknown rank" : dims_text(io.dims)) + ")";
}

std::string list_ios(const std::vector<ModelIo>& ios) {
  std::string text;
  for (const auto& io : ios) text += (text.empty() ? "" : ", ") + describe(io);
  return text.empty() ? "none" : text;
}

const ModelIo* find_io(const std::vector<ModelIo>& ios, std::string_view name) {
  for (const auto& io : ios)
    if (io.name == name) return &io;
  return nullptr;
}

[[noreturn]] void config_error(const std::string& message) {
  throw BackendError(TRITONSERVER_ERROR_INVALID_ARG, message);
}

Json read_config(TRITONBACKEND_Model* model) {
  TRITONSERVER_Message* message = nullptr;
  check(TRITONBACKEND_ModelConfig(model, 1, &message), "reading the model configuration");
  std::unique_ptr<TRITONSERVER_Message, void (*)(TRITONSERVER_Message*)> owner(
      message, [](TRITONSERVER_Message* m) {
        if (TRITONSERVER_Error* e = TRITONSERVER_MessageDelete(m)) TRITONSERVER_ErrorDelete(e);
      });
  const char* json = nullptr;
  size_t size = 0;
  check(TRITONSERVER_MessageSerializeToJson(message, &json, &size),
        "reading the model configuration");
  try {
    return Json::parse(std::string_view(json, size));
  } catch (const std::runtime_error& e) {
    throw BackendError(TRITONSERVER_ERROR_INTERNAL,
                       std::string("the model configuration from the server: ") + e.what());
  }
}

int64_t config_int(const Json& config, std::string_view key) {
  const Json* value = config.find(key);
  if (value == nullptr || value->is_null()) return 0;
  std::optional<int64_t> number = value->as_int();
  if (!number) config_error(std::string(key) + " is not an integer");
  return *number;
}

std::string config_string(const Json& object, std::string_view key) {
  const Json* value = object.find(key);
  return value ? value->text() : std::string();
}

std::vector<int64_t> config_dims(const Json& entry, const std::string& what,
                                 std::string_view key = "dims") {
  std::vector<int64_t> dims;
  if (const Json* list = entry.find(key)) {
    for (const Json& d : list->items()) {
      std::optional<int64_t> v = d.as_int();
      if (!v) config_error(what + ": dims holds something that is not an integer");
      dims.push_back(*v);
    }
  }
  return dims;
}

// Makes "input" or "output" an array when absent.
void ensure_list(Json& config, std::string_view key) {
  const Json* list = config.find(key);
  if (list == nullptr || !list->is_array()) config.set(key, Json::array());
}

bool has_scheduler(const Json& config) {
  for (const char* key : {"dynamic_batching", "sequence_batching", "ensemble_scheduling"})
    if (const Json* v = config.find(key); v && !v->is_null()) return true;
  return false;
}

// Every input and output has a first dimension the model leaves open: requests can be stacked.
bool batchable(const std::vector<ModelIo>& inputs, const std::vector<ModelIo>& outputs) {
  if (inputs.empty()) return false;
  for (const auto* ios : {&inputs, &outputs})
    for (const auto& io : *ios)
      if (io.rank < 1 || io.dims[0] != -1) return false;
  return true;
}

}  // namespace

ModelState::ModelState(TRITONBACKEND_Model* triton_model, BackendState& backend)
    : triton_model_(triton_model), backend_(backend) {
  const char* name = nullptr;
  check(TRITONBACKEND_ModelName(triton_model, &name), "model name");
  name_ = name;
  check(TRITONBACKEND_ModelVersion(triton_model, &version_), "model version");
  TRITONBACKEND_ArtifactType artifact = TRITONBACKEND_ARTIFACT_FILESYSTEM;
  const char* location = nullptr;
  check(TRITONBACKEND_ModelRepository(triton_model, &artifact, &location), "model repository");
  if (artifact != TRITONBACKEND_ARTIFACT_FILESYSTEM)
    throw BackendError(TRITONSERVER_ERROR_UNSUPPORTED,
                       "the loom backend reads models from a local directory only");
  directory_ = location;

  Json config = read_config(triton_model);
  read_parameters(config);
  model_path_ = find_model_file(config);
  loom_model_t* loaded = nullptr;
  check(loom_model_load(backend_.runtime, model_path_.c_str(), &loaded), "loading " + model_path_);
  model_.reset(loaded);

  bool auto_complete = false;
  check(TRITONBACKEND_ModelAutoCompleteConfig(triton_model, &auto_complete),
        "auto-complete setting");
  if (auto_complete && complete_config(config)) {
    std::string json = config.dump();
    TRITONSERVER_Message* message = nullptr;
    check(TRITONSERVER_MessageNewFromSerializedJson(&message, json.data(), json.size()),
          "the completed model configuration");
    TRITONSERVER_Error* error = TRITONBACKEND_ModelSetConfig(triton_model, 1, message);
    if (TRITONSERVER_Error* e = TRITONSERVER_MessageDelete(message)) TRITONSERVER_ErrorDelete(e);
    check(error, "setting the completed model configuration");
    // The server may fill more fields: the configuration it holds now is the one to check.
    config = read_config(triton_model);
  }
  check_config(config);
  // Every instance runs on one session that runs as many inferences at once as there are
  // instances (max_concurrent_runs): the instances share the model and, where the device shares
  // them (onednn), its compiled weights, and `threads` is their budget together.
  instances_ = 0;
  if (const Json* groups = config.find("instance_group"); groups && groups->is_array())
    for (const Json& group : groups->items()) {
      const int64_t count = config_int(group, "count");
      instances_ += count > 0 ? count : 1;
    }
  instances_ = std::clamp<int64_t>(instances_, 1, loom_max_threads());

  std::string summary = "loom: model '" + name_ + "' version " + std::to_string(version_) + ": " +
                        model_path_ + " (" + loom_model_format(model_.get()) +
                        "), max_batch_size " + std::to_string(max_batch_size_) + ", devices " +
                        devices_ + ", " + std::to_string(instances_) +
                        " instance(s) on one session";
  log(TRITONSERVER_LOG_INFO, summary);
}

const TensorSpec* ModelState::find_input(std::string_view name) const {
  for (const auto& spec : inputs_)
    if (spec.name == name) return &spec;
  return nullptr;
}

void ModelState::read_parameters(const Json& config) {
  const Json* params = config.find("parameters");
  if (params == nullptr || !params->is_object()) return;
  std::string precision;
  bool options_given = false;
  for (const auto& [key, value] : params->members()) {
    std::string text = config_string(value, "string_value");
    if (key == "devices") {
      if (text.empty()) config_error("parameter devices is empty (e.g. \"onednn,cpu\")");
      devices_ = text;
    } else if (key == "threads") {
      Json as_number = Json::number_text(text);
      std::optional<int64_t> n = as_number.as_int();
      if (!n || *n < 0 || *n > loom_max_threads())
        config_error("parameter threads is \"" + text + "\": give 0 (all cores) up to " +
                     std::to_string(loom_max_threads()));
      threads_ = static_cast<int32_t>(*n);
    } else if (key == "precision") {
      if (text != "f32" && text != "bf16" && text != "f16")
        config_error("parameter precision is \"" + text + "\": give f32, bf16 or f16");
      precision = text;
    } else if (key == "device_options") {
      device_options_ = text;
      options_given = true;
    } else {
      config_error("unknown parameter '" + key +
                   "': the loom backend takes devices, threads, precision and device_options");
    }
  }
  if (!precision.empty() && precision != "f32") {
    // As infer-run --precision: every device gets precision=VALUE.
    if (options_given && device_options_.find("precision=") != std::string::npos)
      config_error("precision is given both as a parameter and in device_options");
    device_options_ += (device_options_.empty() ? "" : ";") + ("precision=" + precision);
  }
}

std::string ModelState::find_model_file(const Json& config) const {
  fs::path version_dir = fs::path(directory_) / std::to_string(version_);
  std::string file = config_string(config, "default_model_filename");
  if (!file.empty()) {
    fs::path path = version_dir / file;
    if (!fs::is_regular_file(path))
      throw BackendError(TRITONSERVER_ERROR_NOT_FOUND,
                         "no model file " + path.string() + " (default_model_filename)");
    return path.string();
  }
  // Without default_model_filename: the first of these, one per format Loom reads.
  static const char* const kCandidates[] = {"model.onnx", "model.loom", "model.tflite",
                                            "model.param"};
  for (const char* candidate : kCandidates)
    if (fs::is_regular_file(version_dir / candidate)) return (version_dir / candidate).string();
  throw BackendError(TRITONSERVER_ERROR_NOT_FOUND,
                     "no model file in " + version_dir.string() +
                         ": expected model.onnx, model.loom, model.tflite or model.param, or "
                         "the file named by default_model_filename");
}

bool ModelState::complete_config(Json& config) const {
  std::vector<ModelIo> inputs = model_ios(model_.get(), false);
  std::vector<ModelIo> outputs = model_ios(model_.get(), true);
  ensure_list(config, "input");
  ensure_list(config, "output");
  // Looked up after both exist: adding a member may move the others.
  Json& input_list = *config.find("input");
  Json& output_list = *config.find("output");
  bool changed = false;

  int64_t max_batch = config_int(config, "max_batch_size");
  bool lists_tensors = !input_list.items().empty() || !output_list.items().empty();
  // Like Triton's onnxruntime backend: a model whose every tensor starts with an open dimension
  // gets a default max_batch_size and the dynamic batcher, unless the config said anything about
  // its tensors (whose dims then decide whether there is a batch dimension).
  if (max_batch == 0 && !lists_tensors && backend_.default_max_batch_size > 0 &&
      batchable(inputs, outputs) && config.find("sequence_batching") == nullptr) {
    max_batch = backend_.default_max_batch_size;
    changed = true;
  }

  auto complete = [&](Json& list, const std::vector<ModelIo>& ios, const char* what) {
    for (const auto& io : ios) {
      bool listed = std::any_of(list.items().begin(), list.items().end(),
                                [&](const Json& e) { return config_string(e, "name") == io.name; });
      if (listed) continue;
      std::string type = config_dtype_name(io.dtype);
      if (io.kind != LOOM_VALUE_KIND_TENSOR || io.rank < 0 || type.empty())
        config_error(std::string("cannot complete the configuration: the model's ") + what + " " +
                     describe(io) +
                     (io.kind != LOOM_VALUE_KIND_TENSOR ? " is not a tensor"
                                                        : " has no type or rank Triton can state") +
                     "; list the model's tensors in config.pbtxt");
      Json entry = Json::object();
      entry.set("name", Json::string(io.name));
      entry.set("data_type", Json::string(type));
      Json dims = Json::array();
      // With a batch dimension, Triton's dims leave it out.
      size_t first = (max_batch > 0 && io.rank >= 1) ? 1 : 0;
      for (size_t i = first; i < io.dims.size(); ++i) dims.push_back(Json::number(io.dims[i]));
      if (dims.items().empty()) {
        // Triton wants at least one dim: a scalar per batch row (or a scalar) is stated as
        // [1] and reshaped to [] for the model, Triton's own convention.
        dims.push_back(Json::number(1));
        Json reshape = Json::object();
        reshape.set("shape", Json::array());
        entry.set("reshape", std::move(reshape));
      }
      entry.set("dims", std::move(dims));
      list.push_back(std::move(entry));
      changed = true;
    }
  };
  complete(input_list, inputs, "input");
  complete(output_list, outputs, "output");
  // Set last: new members would move the lists the lambda above appends to.
  if (max_batch != config_int(config, "max_batch_size")) {
    config.set("max_batch_size", Json::number(max_batch));
    if (!has_scheduler(config)) config.set("dynamic_batching", Json::object());
  }
  return changed;
}

void ModelState::check_config(const Json& config) {
  std::vector<ModelIo> inputs = model_ios(model_.get(), false);
  std::vector<ModelIo> outputs = model_ios(model_.get(), true);
  max_batch_size_ = config_int(config, "max_batch_size");
  if (max_batch_size_ < 0) config_error("max_batch_size is negative");
  num_model_outputs_ = outputs.size();
  model_output_names_.clear();
  for (const auto& io : outputs) model_output_names_.push_back(io.name);

  for (const auto& io : inputs)
    if (io.kind != LOOM_VALUE_KIND_TENSOR)
      throw BackendError(TRITONSERVER_ERROR_UNSUPPORTED,
                         "the model's input " + describe(io) +
                             " is a sequence or optional; the loom backend serves tensors only");

  auto check_list = [&](const char* key, const std::vector<ModelIo>& ios, const char* what,
                        std::vector<TensorSpec>& specs) {
    specs.clear();
    const Json* list = config.find(key);
    if (list == nullptr) return;
    for (const Json& entry : list->items()) {
      TensorSpec spec;
      spec.name = config_string(entry, "name");
      std::string subject = std::string(what) + " '" + spec.name + "'";
      const ModelIo* io = find_io(ios, spec.name);
      if (io == nullptr)
        config_error("config.pbtxt names " + subject + ", which the model (" + model_path_ +
                     ") does not have; its " + what + "s are: " + list_ios(ios));
      spec.model_index = static_cast<size_t>(io - ios.data());
      if (io->kind != LOOM_VALUE_KIND_TENSOR)
        throw BackendError(TRITONSERVER_ERROR_UNSUPPORTED,
                           subject +
                               " is a sequence or optional; the loom backend serves "
                               "tensors only");
      std::string type = config_string(entry, "data_type");
      spec.dtype = loom_dtype_from_config(type);
      if (spec.dtype == LOOM_DTYPE_UNDEFINED)
        config_error(subject + ": data_type " + type + " is not one the loom backend serves");
      if (spec.dtype != io->dtype)
        config_error(subject + ": config.pbtxt says " + type + ", the model's is " + describe(*io));
      spec.triton_dtype = triton_dtype(spec.dtype);
      spec.dims = config_dims(entry, subject);
      spec.model_dims = spec.dims;
      const Json* reshape = entry.find("reshape");
      if (reshape && reshape->is_object())
        spec.model_dims = config_dims(*reshape, subject, "shape");

      std::vector<int64_t> full = spec.model_dims;
      if (max_batch_size_ > 0) {
        if (io->rank == 0 || (io->rank > 0 && io->dims[0] != -1))
          config_error("max_batch_size is " + std::to_string(max_batch_size_) +
                       " but the model's " + what + " " + describe(*io) +
                       " has no dynamic first dimension to batch along; set max_batch_size: 0 "
                       "and give the whole shape in dims");
        full.insert(full.begin(), -1);
      }
      if (io->rank >= 0) {
        bool agree = full.size() == io->dims.size();
        for (size_t i = 0; agree && i < full.size(); ++i)
          if (full[i] >= 0 && io->dims[i] >= 0 && full[i] != io->dims[i]) agree = false;
        if (!agree)
          config_error(subject + ": config.pbtxt gives " +
                       (spec.model_dims != spec.dims ? "reshape " : "dims ") +
                       dims_text(spec.model_dims) +
                       (max_batch_size_ > 0 ? " after the batch dimension" : "") +
                       ", which does not fit the model's " + describe(*io));
      }
      specs.push_back(std::move(spec));
    }
  };
  check_list("input", inputs, "input", inputs_);
  check_list("output", outputs, "output", outputs_);

  // Every input the model takes must come with each request.
  for (const auto& io : inputs)
    if (find_input(io.name) == nullptr)
      config_error("the model's input " + describe(io) +
                   " is missing from config.pbtxt (the model needs every input)");
}

ModelState::~ModelState() {
  if (session_) loom_session_destroy(session_);
}

loom_session_t* ModelState::session() {
  // Instances may be initialized on several threads at once.
  std::lock_guard<std::mutex> lock(session_mutex_);
  if (session_) return session_;
  loom_session_options_t options{};
  options.struct_size = sizeof options;
  options.devices = devices_.c_str();
  options.threads = threads_;
  options.device_options = device_options_.empty() ? nullptr : device_options_.c_str();
  options.max_concurrent_runs = static_cast<int32_t>(instances_);
  check(loom_session_create(backend_.runtime, model_.get(), &options, &session_),
        "creating a session of " + model_path_ + " on devices " + devices_);
  return session_;
}

}  // namespace loom::triton
