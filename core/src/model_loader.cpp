#include "model_loader.hpp"

#include "builder.hpp"
#include "format_sniff.hpp"
#include "status.hpp"
#include "validate.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace loom::core {
namespace {

// A read-only mapping of the model file, alive while the load runs (plugins that borrow
// initializer bytes keep a reference through add_initializer_borrowed's release callback).
// The builder drops the pages of initializers it copies out of it (see builder.hpp), so the
// file's weights do not stay resident beside the core's copy.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0)
      fail(errno == ENOENT ? LOOM_ERROR_NOT_FOUND : LOOM_ERROR_INVALID_ARGUMENT,
           "cannot open model '" + path + "': " + std::strerror(errno));
    struct stat st;
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      fail(LOOM_ERROR_INVALID_ARGUMENT, "model '" + path + "' is not a regular file");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ == 0) {
      ::close(fd_);
      fail(LOOM_ERROR_INVALID_MODEL, "model '" + path + "' is empty");
    }
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (p == MAP_FAILED) {
      ::close(fd_);
      fail(LOOM_ERROR_RUNTIME, "cannot map model '" + path + "': " + std::strerror(errno));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ~MappedFile() {
    ::munmap(const_cast<uint8_t*>(data_), size_);
    ::close(fd_);
  }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  int fd_ = -1;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// "; process resident R MiB, peak P MiB" (VmRSS, VmHWM), or "" where /proc is missing.
std::string process_memory() {
  std::ifstream in("/proc/self/status");
  std::string line, rss, hwm;
  while (std::getline(in, line)) {
    auto mib = [&](size_t prefix) {  // the kernel writes kB
      return std::to_string(std::strtoll(line.c_str() + prefix, nullptr, 10) / 1024);
    };
    if (line.rfind("VmRSS:", 0) == 0) rss = mib(6);
    if (line.rfind("VmHWM:", 0) == 0) hwm = mib(6);
  }
  if (rss.empty() || hwm.empty()) return "";
  return "; process resident " + rss + " MiB, peak " + hwm + " MiB";
}

// The debug line after a load: what it cost in time and memory (the constants are the weights).
void log_loaded(const Runtime& runtime, const Model& model,
                std::chrono::steady_clock::duration took) {
  if (!runtime.logs(LOOM_LOG_DEBUG)) return;  // spares the walk and the read of /proc
  size_t constants = 0, bytes = 0;
  for (const Value& v : model.graph->values)
    if (v.constant) {
      ++constants;
      bytes += v.constant->size;
    }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
  runtime.log(LOOM_LOG_DEBUG, "loader",
              "loaded '" + model.path + "' (" + model.format + ") in " + std::to_string(ms) +
                  " ms: " + std::to_string(constants) + " initializers, " +
                  std::to_string(bytes >> 20) + " MiB" + process_memory());
}

}  // namespace

std::shared_ptr<Model> load_model(Runtime& runtime, const std::string& path) {
  const auto started = std::chrono::steady_clock::now();
  auto mapping = std::make_shared<MappedFile>(path);
  const MappedFile& file = *mapping;
  if (runtime.formats.empty()) {
    SniffedFormat sniffed = sniff_format(file.data(), std::min<size_t>(file.size(), 4096));
    if (!sniffed.plugin.empty())
      fail(LOOM_ERROR_NOT_FOUND, "'" + path + "' looks like " + sniffed.description + "; the " +
                                     sniffed.plugin +
                                     " format plugin is not installed (no format plugin is "
                                     "loaded; pass --plugin or install loom-format-" +
                                     sniffed.plugin + ")");
    fail(LOOM_ERROR_NOT_FOUND,
         "no format plugin is loaded, so '" + path +
             "' cannot be read: install a format plugin (e.g. loom-format-onnx) or pass --plugin");
  }
  const FormatEntry* best = nullptr;
  int32_t best_score = 0;
  size_t head = std::min<size_t>(file.size(), 4096);
  for (const FormatEntry& f : runtime.formats) {
    int32_t score = f.desc.probe(f.desc.user, file.data(), head, path.c_str());
    if (score > best_score) {
      best_score = score;
      best = &f;
    }
  }
  if (!best) {
    std::string names;
    for (const FormatEntry& f : runtime.formats) names += (names.empty() ? "" : ", ") + std::string(f.desc.name);
    SniffedFormat sniffed = sniff_format(file.data(), head);
    bool installed = false;
    for (const FormatEntry& f : runtime.formats) installed |= sniffed.plugin == f.desc.name;
    if (installed)
      fail(LOOM_ERROR_INVALID_MODEL, "'" + path + "' looks like " + sniffed.description +
                                         ", but the " + sniffed.plugin +
                                         " format plugin does not recognize it (damaged file?)");
    if (!sniffed.description.empty() && !sniffed.plugin.empty())
      fail(LOOM_ERROR_UNSUPPORTED, "'" + path + "' looks like " + sniffed.description + "; the " +
                                       sniffed.plugin + " format plugin is not installed " +
                                       "(installed formats: " + names + ")");
    if (!sniffed.description.empty())
      fail(LOOM_ERROR_UNSUPPORTED, "'" + path + "' looks like " + sniffed.description +
                                       ", which Loom does not read: " + sniffed.advice);
    fail(LOOM_ERROR_INVALID_MODEL, "'" + path + "' is not in a model format the installed plugins recognize (installed formats: " + names + ")");
  }

  auto model = std::make_shared<Model>();
  model->graph = std::make_shared<Graph>();
  model->graph->name = "main";
  model->format = best->desc.name;
  model->path = path;
  model->file_mapping = mapping;  // plugins may borrow initializer bytes from the mapping
  loom_graph_builder_t builder;
  builder.model = model.get();
  builder.graph = model->graph.get();
  builder.file_mapping = std::span<const uint8_t>(file.data(), file.size());

  std::string dir = std::filesystem::absolute(path).parent_path().string();
  loom_load_args_t args;
  std::memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.path = path.c_str();
  args.directory = dir.c_str();
  args.data = file.data();
  args.size = file.size();
  throw_if_error(best->desc.load(best->desc.user, &args, builder_api(), &builder),
                 "cannot load '" + path + "' (" + best->desc.name + ")");
  try {
    validate_model(*model, runtime.schemas);
  } catch (const Error& e) {
    throw Error(e.code(), "'" + path + "': " + e.what());
  }
  log_loaded(runtime, *model, std::chrono::steady_clock::now() - started);
  return model;
}

}  // namespace loom::core
