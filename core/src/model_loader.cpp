#include "model_loader.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "builder.hpp"
#include "format_sniff.hpp"
#include "status.hpp"
#include "validate.hpp"

namespace loom::core {
namespace {

// ---- model files that change under a running session ---------------------------------------
// A mapping of a file (even MAP_PRIVATE, even pages the process has written: truncation unmaps
// private copies past the new end too) raises SIGBUS at every access past the file's new end
// once the file is truncated, and the .loom format borrows its weights from the model file's
// bytes for the life of the model. So:
// - a file up to kDefaultCopyLimit bytes is read into anonymous memory, which nothing outside
//   the process can take away. The builder cannot drop the pages of initializers it copies out
//   of anonymous memory (MADV_DONTNEED would zero them, and a plugin may read the same bytes
//   twice, e.g. an inlined function's constants), so the copy is kept whole while the load runs
//   (a load's peak holds the file twice: hence the low limit) and freed right after it when no
//   constant borrows from it (drop_unborrowed_copy);
// - a larger file is mapped, and a read lease (F_SETLEASE) is taken on it where the kernel
//   grants one (the process owns the file or has CAP_LEASE; a local file system). Before
//   another process may open the file for writing or truncate it, the kernel signals the lease
//   holder and holds the writer back (up to /proc/sys/fs/lease-break-time, 45 s by default):
//   on that signal the mapping is copied into anonymous memory at the same address (mremap),
//   and the lease is released. Without a lease (refused, or another handler already owns the
//   signal), writing the file in place still ends the process with SIGBUS.
// Replacing the file by rename() (write a new file, then move it over the old name) never
// disturbs a loaded model: the old inode lives on until the model is freed.
constexpr size_t kDefaultCopyLimit = size_t{16} << 20;
// The lease-break signal. SIGIO is the kernel's default for leases; F_SETSIG names it
// explicitly so that the handler gets siginfo. Its default action ends the process, so a lease
// is only taken once our handler is installed.
constexpr int kLeaseSignal = SIGIO;

// LOOM_MODEL_COPY_LIMIT=<bytes> overrides kDefaultCopyLimit (0: map every file).
size_t copy_limit() {
  const char* env = std::getenv("LOOM_MODEL_COPY_LIMIT");
  if (!env || !*env) return kDefaultCopyLimit;
  char* end = nullptr;
  unsigned long long v = std::strtoull(env, &end, 10);
  return end && *end == '\0' ? static_cast<size_t>(v) : kDefaultCopyLimit;
}

// The leased mappings, for the signal handler (which may not lock or allocate). A slot goes
// kFree -> kClaimed (filled by its owner) -> kActive -> kBusy (the handler works on it) ->
// kActive or kCopied; its owner takes it back to kFree, waiting while it is kBusy.
enum SlotState : int { kFree, kClaimed, kActive, kBusy, kCopied };
struct LeaseSlot {
  std::atomic<int> state{kFree};
  int fd = -1;
  void* addr = nullptr;
  size_t size = 0;
};
constexpr size_t kLeaseSlots = 64;
LeaseSlot g_lease_slots[kLeaseSlots];

// Replaces the file mapping [addr, addr + size) by an anonymous copy of its bytes, at the same
// address: readers on other threads see the same bytes before and after.
bool copy_mapping_in_place(void* addr, size_t size) {
  void* copy = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (copy == MAP_FAILED) return false;
  std::memcpy(copy, addr, size);
  ::mprotect(copy, size, PROT_READ);
  if (::mremap(copy, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, addr) == MAP_FAILED) {
    ::munmap(copy, size);
    return false;
  }
  return true;
}

// The lease-break handler. Signals of one kind do not queue, so it checks every leased file:
// F_GETLEASE reports F_UNLCK for the one whose lease is being broken.
void on_lease_break(int, siginfo_t*, void*) {
  const int saved_errno = errno;
  for (LeaseSlot& slot : g_lease_slots) {
    int expected = kActive;
    if (!slot.state.compare_exchange_strong(expected, kBusy, std::memory_order_acquire)) continue;
    if (::fcntl(slot.fd, F_GETLEASE) != F_UNLCK) {
      slot.state.store(kActive, std::memory_order_release);
      continue;
    }
    // Should the copy fail (no memory), the lease goes anyway: the writer waits for it.
    (void)copy_mapping_in_place(slot.addr, slot.size);
    ::fcntl(slot.fd, F_SETLEASE, F_UNLCK);
    slot.state.store(kCopied, std::memory_order_release);
  }
  errno = saved_errno;
}

// Installs on_lease_break once; false when the application handles kLeaseSignal itself.
bool lease_handler_ready() {
  static const bool ready = [] {
    struct sigaction old;
    if (::sigaction(kLeaseSignal, nullptr, &old) != 0) return false;
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler != SIG_DFL) return false;
    if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction != on_lease_break) return false;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_lease_break;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    return ::sigaction(kLeaseSignal, &sa, nullptr) == 0;
  }();
  return ready;
}

// The model file's bytes (a copy, or a private mapping under a lease: see above), alive while
// the load runs and, through Model::file_mapping, while constants borrow from them (plugins
// that borrow initializer bytes keep a reference through add_initializer_borrowed's release
// callback). The builder drops the pages of initializers it copies out of a mapping (see
// builder.hpp), so the file's weights do not stay resident beside the core's copy.
class ModelBytes {
 public:
  virtual ~ModelBytes() = default;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // False for a copy in anonymous memory (see above).
  bool mapped() const { return mapped_; }

 protected:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
};

// The application's bytes (loom_model_load_memory), copied: the application may free or reuse
// its buffer as soon as the call returns, while plugins may borrow initializers from the copy
// for the life of the model. Page-aligned anonymous memory, like a file's copy.
class MemoryCopy final : public ModelBytes {
 public:
  MemoryCopy(const void* data, size_t size) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      fail(LOOM_ERROR_OUT_OF_MEMORY,
           "cannot allocate " + std::to_string(size) + " bytes to copy the model");
    std::memcpy(p, data, size);
    (void)::mprotect(p, size, PROT_READ);
    data_ = static_cast<const uint8_t*>(p);
    size_ = size;
  }
  ~MemoryCopy() override { ::munmap(const_cast<uint8_t*>(data_), size_); }
  MemoryCopy(const MemoryCopy&) = delete;
  MemoryCopy& operator=(const MemoryCopy&) = delete;
};

class ModelFile final : public ModelBytes {
 public:
  ModelFile(const Runtime& runtime, const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
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
    if (size_ <= copy_limit()) {
      read_copy(path);
      return;
    }
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (p == MAP_FAILED) {
      ::close(fd_);
      fail(LOOM_ERROR_RUNTIME, "cannot map model '" + path + "': " + std::strerror(errno));
    }
    data_ = static_cast<const uint8_t*>(p);
    mapped_ = true;
    take_lease(runtime, path);
  }
  ~ModelFile() override {
    if (slot_) {
      for (;;) {  // wait out a handler that is copying this mapping on another thread
        int state = slot_->state.load(std::memory_order_acquire);
        if (state == kBusy) {
          sched_yield();
          continue;
        }
        if (slot_->state.compare_exchange_weak(state, kFree, std::memory_order_acq_rel)) break;
      }
      ::fcntl(fd_, F_SETLEASE, F_UNLCK);
    }
    ::munmap(const_cast<uint8_t*>(data_), size_);
    ::close(fd_);
  }
  ModelFile(const ModelFile&) = delete;
  ModelFile& operator=(const ModelFile&) = delete;

 private:
  void read_copy(const std::string& path) {
    // Anonymous memory: page-aligned like a mapping, so the alignment of the weights in the
    // file (64 bytes in .loom) holds in memory too.
    void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      ::close(fd_);
      fail(LOOM_ERROR_OUT_OF_MEMORY,
           "cannot allocate " + std::to_string(size_) + " bytes to read model '" + path + "'");
    }
    auto* out = static_cast<uint8_t*>(p);
    for (size_t done = 0; done < size_;) {
      ssize_t n = ::pread(fd_, out + done, size_ - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        std::string why = n == 0 ? "the file shrank while it was read" : std::strerror(errno);
        ::munmap(p, size_);
        ::close(fd_);
        fail(LOOM_ERROR_INVALID_MODEL, "cannot read model '" + path + "': " + why);
      }
      done += static_cast<size_t>(n);
    }
    (void)::mprotect(p, size_, PROT_READ);  // the bytes are the file's: nothing writes them
    data_ = out;
  }

  void take_lease(const Runtime& runtime, const std::string& path) {
    std::string why;
    if (!lease_handler_ready()) {
      why = "SIGIO has a handler of the application's";
    } else {
      for (LeaseSlot& slot : g_lease_slots) {
        int expected = kFree;
        if (slot.state.compare_exchange_strong(expected, kClaimed, std::memory_order_acquire)) {
          slot_ = &slot;
          break;
        }
      }
      if (!slot_) {
        why = "too many leased model files";
      } else {
        slot_->fd = fd_;
        slot_->addr = const_cast<uint8_t*>(data_);
        slot_->size = size_;
        if (::fcntl(fd_, F_SETSIG, kLeaseSignal) != 0 || ::fcntl(fd_, F_SETLEASE, F_RDLCK) != 0) {
          why = std::strerror(errno);
          slot_->state.store(kFree, std::memory_order_release);
          slot_ = nullptr;
        } else {
          slot_->state.store(kActive, std::memory_order_release);
        }
      }
    }
    if (!why.empty() && runtime.logs(LOOM_LOG_DEBUG))
      runtime.log(LOOM_LOG_DEBUG, "loader",
                  "no read lease on '" + path + "' (" + why +
                      "): writing the file in place while it is loaded ends the process with "
                      "SIGBUS; replace it by rename instead");
  }

  int fd_ = -1;
  LeaseSlot* slot_ = nullptr;
};

// True when a constant of `graph` (or of a graph nested in it) points into [begin, begin + size).
bool borrows_from(const Graph& graph, const uint8_t* begin, size_t size) {
  auto inside = [&](const std::shared_ptr<ConstantData>& c) {
    if (!c || !c->data) return false;
    auto at = reinterpret_cast<uintptr_t>(c->data), start = reinterpret_cast<uintptr_t>(begin);
    return at >= start && at - start < size;
  };
  for (const Value& v : graph.values)
    if (inside(v.constant)) return true;
  for (const Node& n : graph.nodes)
    for (const Attribute& a : n.attributes)
      if (inside(a.tensor) || (a.graph && borrows_from(*a.graph, begin, size))) return true;
  return false;
}

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

namespace {

// Where the bytes came from, for the format plugin and for messages.
struct Source {
  std::string label;      // the path, or "<memory>"
  const char* directory;  // for external data; null = none
  bool from_memory;
  std::string format;  // the format plugin the application named; "" = probe
};

// No format plugin is loaded: says which one `path` needs, where its bytes tell.
[[noreturn]] void fail_no_formats(const ModelBytes& file, const std::string& path) {
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

// "onnx, tflite": the loaded format plugins' names.
std::string format_names(const Runtime& runtime) {
  std::string names;
  for (const FormatEntry& f : runtime.formats)
    names += (names.empty() ? "" : ", ") + std::string(f.desc.name);
  return names;
}

// No loaded format recognizes `path`: says what it looks like and what would read it.
[[noreturn]] void fail_unrecognized(const Runtime& runtime, const ModelBytes& file,
                                    const std::string& path, size_t head) {
  std::string names = format_names(runtime);
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
  fail(LOOM_ERROR_INVALID_MODEL,
       "'" + path +
           "' is not in a model format the installed plugins recognize (installed formats: " +
           names + ")");
}

// The format plugin to read `file` with: the one the application named, else the one whose
// probe scores highest.
const FormatEntry& choose_format(const Runtime& runtime, const ModelBytes& file,
                                 const Source& source) {
  const std::string& path = source.label;
  if (runtime.formats.empty()) fail_no_formats(file, path);
  const FormatEntry* best = nullptr;
  size_t head = std::min<size_t>(file.size(), 4096);
  if (!source.format.empty()) {
    for (const FormatEntry& f : runtime.formats)
      if (source.format == f.desc.name) best = &f;
    if (!best)
      fail(LOOM_ERROR_NOT_FOUND, "no format plugin named '" + source.format +
                                     "' is loaded (installed formats: " + format_names(runtime) +
                                     ")");
  } else {
    int32_t best_score = 0;
    for (const FormatEntry& f : runtime.formats) {
      int32_t score = f.desc.probe(f.desc.user, file.data(), head, path.c_str());
      if (score > best_score) {
        best_score = score;
        best = &f;
      }
    }
  }
  if (!best) fail_unrecognized(runtime, file, path, head);
  // A 1.4 format was promised a file path and a directory: it may open either.
  if (source.from_memory && LOOM_ABI_MINOR(best->abi_version) < 5)
    fail(LOOM_ERROR_UNSUPPORTED, "the " + std::string(best->desc.name) + " format plugin (" +
                                     best->plugin +
                                     ") was built for a plugin ABI older than 1.5 and cannot "
                                     "load from memory: rebuild it, or load the model from a file");
  return *best;
}

// The model format plugin `format` builds from the bytes of `mapping`, validated.
std::shared_ptr<Model> build_model(Runtime& runtime, const std::shared_ptr<ModelBytes>& mapping,
                                   const Source& source, const FormatEntry& format) {
  const ModelBytes& file = *mapping;
  const std::string& path = source.label;
  auto model = std::make_shared<Model>();
  model->graph = std::make_shared<Graph>();
  model->graph->name = "main";
  model->format = format.desc.name;
  model->path = path;
  model->file_mapping = mapping;  // plugins may borrow initializer bytes from the mapping
  loom_graph_builder_t builder;
  builder.model = model.get();
  builder.graph = model->graph.get();
  // Only pages of a file mapping may be dropped (ModelFile): a dropped page is read again from
  // the file should a plugin need it twice.
  if (file.mapped()) builder.file_mapping = std::span<const uint8_t>(file.data(), file.size());

  loom_load_args_t args;
  std::memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.path = path.c_str();
  args.directory = source.directory;
  args.data = file.data();
  args.size = file.size();
  args.flags = source.from_memory ? LOOM_LOAD_FROM_MEMORY : 0u;
  throw_if_error(format.desc.load(format.desc.user, &args, builder_api(), &builder),
                 "cannot load '" + path + "' (" + format.desc.name + ")");
  try {
    ValidateOptions validate;
    if (runtime.allow_newer_opsets() != 0)
      validate.allow_newer_opsets = runtime.allow_newer_opsets() > 0;
    validate.warn = [&runtime](const std::string& m) {
      runtime.log(LOOM_LOG_WARNING, "loader", m);
    };
    validate_model(*model, runtime.schemas, validate);
  } catch (const Error& e) {
    throw Error(e.code(), "'" + path + "': " + e.what());
  }
  return model;
}

std::shared_ptr<Model> load_bytes(Runtime& runtime, const std::shared_ptr<ModelBytes>& mapping,
                                  const Source& source,
                                  std::chrono::steady_clock::time_point started) {
  const ModelBytes& file = *mapping;
  const FormatEntry& format = choose_format(runtime, file, source);
  std::shared_ptr<Model> model = build_model(runtime, mapping, source, format);
  // A copy no constant borrows from (formats that copy every initializer, as onnx does) is
  // freed now rather than kept beside the copies for the life of the model.
  if (!file.mapped() && !borrows_from(*model->graph, file.data(), file.size()))
    model->file_mapping.reset();
  log_loaded(runtime, *model, std::chrono::steady_clock::now() - started);
  return model;
}

}  // namespace

std::shared_ptr<Model> load_model(Runtime& runtime, const std::string& path) {
  const auto started = std::chrono::steady_clock::now();
  auto mapping = std::make_shared<ModelFile>(runtime, path);
  std::string dir = std::filesystem::absolute(path).parent_path().string();
  return load_bytes(runtime, mapping, Source{path, dir.c_str(), false, ""}, started);
}

std::shared_ptr<Model> load_model_memory(Runtime& runtime, const void* data, size_t size,
                                         const std::string& format,
                                         const std::string& base_directory) {
  const auto started = std::chrono::steady_clock::now();
  if (size == 0) fail(LOOM_ERROR_INVALID_MODEL, "the model bytes are empty");
  std::string dir;
  if (!base_directory.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(base_directory, ec))
      fail(LOOM_ERROR_NOT_FOUND, "base directory '" + base_directory +
                                     "' for the model's external data is not a directory");
    dir = std::filesystem::absolute(base_directory).string();
  }
  auto mapping = std::make_shared<MemoryCopy>(data, size);
  return load_bytes(runtime, mapping,
                    Source{"<memory>", dir.empty() ? nullptr : dir.c_str(), true, format}, started);
}

}  // namespace loom::core
