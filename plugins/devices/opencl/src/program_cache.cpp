#include "program_cache.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <loom/plugin.hpp>
#include <system_error>
#include <vector>

namespace loom::opencl {
namespace {

constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'C', 'L', 'B', '1'};
constexpr uint64_t kMaxBinary = uint64_t{1} << 30;  // refuse absurd sizes from a corrupt file

uint64_t fnv1a(std::string_view text, uint64_t hash) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string build_log(cl_program program, cl_device_id device) {
  size_t size = 0;
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
  std::string log(size, '\0');
  if (size) clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (log.size() > 4000) log = log.substr(0, 4000) + "\n...";
  return log;
}

// The program from a cached binary, or an empty handle when the file is missing or unusable.
ProgramHandle load_cached(cl_context context, const DeviceEntry& device,
                          const std::filesystem::path& file, const std::string& options) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  char magic[sizeof kMagic];
  uint64_t size = 0;
  if (!in.read(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof kMagic) != 0 ||
      !in.read(reinterpret_cast<char*>(&size), sizeof size) || size == 0 || size > kMaxBinary)
    return {};
  std::vector<unsigned char> binary(size);
  if (!in.read(reinterpret_cast<char*>(binary.data()), static_cast<std::streamsize>(size)))
    return {};
  const unsigned char* data = binary.data();
  size_t length = binary.size();
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  cl_device_id id = device.device;
  ProgramHandle program(clCreateProgramWithBinary(context, 1, &id, &length, &data, &status, &err));
  if (err != CL_SUCCESS || status != CL_SUCCESS) return {};
  if (clBuildProgram(program.get(), 1, &id, options.c_str(), nullptr, nullptr) != CL_SUCCESS)
    return {};
  return program;
}

void store(cl_program program, const std::filesystem::path& file) {
  size_t size = 0;
  check_cl(clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr),
           "clGetProgramInfo(CL_PROGRAM_BINARY_SIZES)");
  if (size == 0) return;  // the driver keeps no binary: nothing to cache
  std::vector<unsigned char> binary(size);
  unsigned char* data = binary.data();
  check_cl(clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof data, &data, nullptr),
           "clGetProgramInfo(CL_PROGRAM_BINARIES)");
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  if (ec)
    throw std::runtime_error("cannot create " + file.parent_path().string() + ": " + ec.message());
  // Write a private temporary file and rename it: concurrent processes never see half a file.
  std::filesystem::path tmp = file;
  tmp += ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    uint64_t length = size;
    out.write(kMagic, sizeof kMagic);
    out.write(reinterpret_cast<const char*>(&length), sizeof length);
    out.write(reinterpret_cast<const char*>(binary.data()), static_cast<std::streamsize>(size));
    if (!out) {
      std::filesystem::remove(tmp, ec);
      throw std::runtime_error("cannot write " + tmp.string());
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw std::runtime_error("cannot rename the cache file into " + file.string());
  }
}

}  // namespace

std::filesystem::path program_cache_directory() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg == '/') return std::filesystem::path(xdg) / "loom" / "opencl";
  const char* home = std::getenv("HOME");
  if (home && *home == '/') return std::filesystem::path(home) / ".cache" / "loom" / "opencl";
  return {};
}

std::string program_cache_key(const DeviceEntry& device, std::string_view options,
                              std::string_view source) {
  std::string identity = device.name + '\n' + device.vendor + '\n' + device.driver_version + '\n' +
                         device.device_version + '\n' + device.platform_version + '\n' +
                         std::string(options) + '\n';
  // Two independent 64-bit FNV-1a hashes: 128 bits, so collisions are not a concern.
  uint64_t h1 = fnv1a(source, fnv1a(identity, 0xcbf29ce484222325ull));
  uint64_t h2 = fnv1a(source, fnv1a(identity, 0x84222325cbf29ce4ull ^ 0x5bd1e995ull));
  char text[40];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(h1),
                static_cast<unsigned long long>(h2));
  return text;
}

ProgramBuild build_program(cl_context context, const DeviceEntry& device, std::string_view source,
                           const std::string& options) {
  auto start = std::chrono::steady_clock::now();
  auto elapsed_ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  };
  ProgramBuild result;
  std::filesystem::path dir = program_cache_directory();
  if (!dir.empty()) result.cache_file = dir / (program_cache_key(device, options, source) + ".bin");
  if (!result.cache_file.empty()) {
    result.program = load_cached(context, device, result.cache_file, options);
    if (result.program) {
      result.from_cache = true;
      result.milliseconds = elapsed_ms();
      return result;
    }
  }
  const char* text = source.data();
  size_t length = source.size();
  cl_int err = CL_SUCCESS;
  ProgramHandle program(clCreateProgramWithSource(context, 1, &text, &length, &err));
  check_cl(err, "clCreateProgramWithSource");
  cl_device_id id = device.device;
  err = clBuildProgram(program.get(), 1, &id, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS)
    sdk::fail(LOOM_ERROR_RUNTIME, "opencl: the kernels do not compile on " + device.name + " (" +
                                      cl_error_name(err) + "):\n" + build_log(program.get(), id));
  result.milliseconds = elapsed_ms();
  if (!result.cache_file.empty()) {
    try {
      store(program.get(), result.cache_file);
    } catch (const std::exception& e) {
      sdk::log(LOOM_LOG_WARNING, "opencl",
               std::string("cannot store the compiled kernels in the cache: ") + e.what());
    }
  }
  result.program = std::move(program);
  return result;
}

}  // namespace loom::opencl
