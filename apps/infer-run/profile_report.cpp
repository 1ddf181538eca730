#include "profile_report.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <loom_apps/json_writer.hpp>
#include <map>
#include <set>
#include <tuple>

#include "app_error.hpp"

namespace loom::infer_run {

AtomicFile::AtomicFile(std::string option, std::string path)
    : option_(std::move(option)), path_(std::move(path)) {
  namespace fs = std::filesystem;
  auto refuse = [&](const std::string& why) {
    throw AppError(kExitUsage, fmt::format("{} {}: {}", option_, path_, why));
  };
  if (path_.empty()) refuse("an empty path");
  std::error_code ec;
  if (fs::is_directory(path_, ec)) refuse("is a directory");
  const fs::path target(path_);
  if (!target.has_filename()) refuse("names no file");
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  // In the target's directory, so that the rename cannot cross file systems; O_EXCL with the
  // pid and a counter never takes over someone else's file. 0666 lets the umask decide the
  // mode, as a plain fopen would.
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    temp_ = (dir / fmt::format(".{}.{}-{}.tmp", target.filename().string(), ::getpid(), attempt))
                .string();
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST)
      refuse(fmt::format("cannot create a file in {}: {}", dir.string(), std::strerror(errno)));
  }
  if (fd_ < 0) refuse(fmt::format("cannot create a temporary file in {}", dir.string()));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
}

void AtomicFile::commit(std::string_view text) {
  auto fail = [&](const char* what) {
    const int err = errno;
    throw AppError(kExitRuntime,
                   fmt::format("{} {}: {}: {}", option_, path_, what, std::strerror(err)));
  };
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write the file");
    done += static_cast<size_t>(n);
  }
  // On disk before the rename: a crash then leaves the old file or the whole new one.
  if (::fsync(fd_) != 0) fail("cannot write the file");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp_.c_str());
    errno = err;
    fail("cannot write the file");
  }
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp_.c_str());
    errno = err;
    fail("cannot rename the file into place");
  }
}

namespace {

struct Sum {
  uint64_t ns = 0;
  uint64_t count = 0;
};

}  // namespace

ProfileStats collect_profile(loom_session_t* session) {
  // Keyed and ordered as the core's summary is, so both list rows in the same order.
  std::map<std::pair<std::string, std::string>, Sum> by_type;                // (op type, device)
  std::map<std::tuple<std::string, std::string, std::string>, Sum> by_node;  // name, op, device
  std::set<uint64_t> runs;
  Sum whole;
  uint64_t leaves = 0;
  size_t events = 0;
  struct Context {
    std::function<void(const loom_profile_event_t&)> fn;
  } context{[&](const loom_profile_event_t& e) {
    ++events;
    runs.insert(e.run);
    const uint64_t ns = e.end_ns - e.start_ns;  // the core gives end >= start
    const std::string_view category = e.category;
    if (category == "run") {
      whole.ns += ns;
      ++whole.count;
    }
    if (!e.counted) return;  // its time is its steps' (a run, a control-flow node...)
    leaves += ns;
    std::string type = e.op_type;
    if (category == "transfer") type = "(transfer)";
    if (category == "device") type = "(device step)";
    if (category == "subgraph") type = "(subgraph, no steps reported)";
    Sum& t = by_type[{type, e.device}];
    t.ns += ns;
    ++t.count;
    if (category == "node" || category == "fused" || category == "host") {
      std::string name = category == "fused" && *e.nodes ? e.nodes : e.name;
      Sum& n = by_node[{name, e.op_type, e.device}];
      n.ns += ns;
      ++n.count;
    }
  }};
  ProfileStats stats;
  stats.dropped = loom_session_profile_events(
      session,
      [](void* user, const loom_profile_event_t* e) { static_cast<Context*>(user)->fn(*e); },
      &context);
  stats.events = events;
  stats.runs = runs.size();
  const double nruns = static_cast<double>(std::max<size_t>(runs.size(), 1));
  const double run_ns = whole.count
                            ? static_cast<double>(whole.ns) / static_cast<double>(whole.count)
                            : static_cast<double>(leaves) / nruns;
  stats.run_ms = run_ns / 1e6;
  stats.steps_ms = static_cast<double>(leaves) / nruns / 1e6;
  auto row = [&](std::string name, std::string op_type, std::string device, const Sum& s) {
    ProfileRow r{std::move(name), std::move(op_type), std::move(device), s.ns, s.count};
    const double per_run = static_cast<double>(s.ns) / nruns;
    r.ms = per_run / 1e6;
    r.share = run_ns > 0 ? 100.0 * per_run / run_ns : 0.0;
    r.count_per_run = static_cast<double>(s.count) / nruns;
    return r;
  };
  for (const auto& [key, s] : by_type)
    stats.by_op_type.push_back(row(key.first, key.first, key.second, s));
  for (const auto& [key, s] : by_node)
    stats.by_node.push_back(row(std::get<0>(key), std::get<1>(key), std::get<2>(key), s));
  auto most_first = [](const ProfileRow& a, const ProfileRow& b) {
    return a.total_ns > b.total_ns;
  };
  std::stable_sort(stats.by_op_type.begin(), stats.by_op_type.end(), most_first);
  std::stable_sort(stats.by_node.begin(), stats.by_node.end(), most_first);
  return stats;
}

std::string profile_json(const ProfileStats& stats, int session, int sessions,
                         const std::string& trace_path) {
  loom::apps::JsonWriter w;
  w.begin_object();
  w.key("session").value(session);
  w.key("sessions").value(sessions);
  w.key("trace");
  if (trace_path.empty())
    w.null();
  else
    w.value(trace_path);
  w.key("runs").value(static_cast<uint64_t>(stats.runs));
  w.key("events").value(static_cast<uint64_t>(stats.events));
  w.key("dropped_events").value(static_cast<uint64_t>(stats.dropped));
  w.key("run_ms").value(stats.run_ms);
  w.key("steps_ms").value(stats.steps_ms);
  w.key("steps_share").value(stats.run_ms > 0 ? 100.0 * stats.steps_ms / stats.run_ms : 0.0);
  w.key("by_op_type").begin_array();
  for (const ProfileRow& r : stats.by_op_type) {
    w.begin_object().key("op_type").value(r.op_type).key("device").value(r.device);
    w.key("ms").value(r.ms).key("share").value(r.share).key("count").value(r.count_per_run);
    w.key("mean_us").value(
        r.count ? static_cast<double>(r.total_ns) / static_cast<double>(r.count) / 1e3 : 0.0);
    w.end_object();
  }
  w.end_array();
  w.key("by_node").begin_array();
  for (const ProfileRow& r : stats.by_node) {
    w.begin_object().key("node").value(r.name).key("op_type").value(r.op_type);
    w.key("device").value(r.device).key("ms").value(r.ms).key("share").value(r.share);
    w.key("count").value(r.count_per_run).end_object();
  }
  w.end_array();
  w.end_object();
  return w.str();
}

}  // namespace loom::infer_run
