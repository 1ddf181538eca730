#include "profiler.hpp"

#include <fmt/format.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <tuple>

#include "session.hpp"  // json_escape

namespace loom::core {

Profiler::Profiler(size_t max_events)
    : max_events_(max_events ? max_events : kDefaultMaxEvents), base_ns_(now_ns()) {}

uint64_t Profiler::now_ns() {
  // The clock of plugin ABI 1.5's loom_profile_step_t: devices read the same one.
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

uint64_t Profiler::thread_id() {
  thread_local const uint64_t id = static_cast<uint64_t>(::syscall(SYS_gettid));
  return id;
}

void Profiler::record(ProfileRecord record) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (events_.size() >= max_events_) {
    ++dropped_;
    return;
  }
  events_.push_back(std::move(record));
}

namespace {

// Times before profiling started (a device's clock read just before) count from 0.
uint64_t since(uint64_t t, uint64_t base) {
  return t > base ? t - base : 0;
}

loom_profile_event_t view_of(const ProfileRecord& r, uint64_t base) {
  loom_profile_event_t e{};
  e.struct_size = sizeof e;
  e.category = r.category.c_str();
  e.name = r.name.c_str();
  e.op_type = r.op_type.c_str();
  e.device = r.device.c_str();
  e.nodes = r.nodes.c_str();
  e.shapes = r.shapes.c_str();
  e.detail = r.detail.c_str();
  e.run = r.run;
  e.thread = r.thread;
  e.start_ns = since(r.start_ns, base);
  e.end_ns = std::max(e.start_ns, since(r.end_ns, base));
  e.counted = r.leaf;
  return e;
}

std::string micros(uint64_t ns) {
  return fmt::format("{:.3f}", static_cast<double>(ns) / 1e3);
}

}  // namespace

size_t Profiler::events(const std::function<void(const loom_profile_event_t&)>& fn) const {
  // A copy, so that fn runs without the lock: it may ask for the trace or the summary, or a
  // profiled run may still record meanwhile.
  std::vector<ProfileRecord> copy;
  size_t dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    copy = events_;
    dropped = dropped_;
  }
  for (const ProfileRecord& r : copy) fn(view_of(r, base_ns_));
  return dropped;
}

std::string Profiler::chrome_trace() const {
  std::lock_guard<std::mutex> lock(mutex_);
  // One process per device (the core's own events under "host"), one thread per OS thread:
  // Perfetto and chrome://tracing then show a track per device and thread.
  std::map<std::string, int> pids{{"host", 1}};
  for (const ProfileRecord& r : events_)
    if (!pids.count(r.device)) pids.emplace(r.device, static_cast<int>(pids.size()) + 1);
  std::set<std::pair<int, uint64_t>> threads;
  std::string out = "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"loom\",";
  out += "\"dropped_events\":" + std::to_string(dropped_) + "},\"traceEvents\":[";
  bool first = true;
  auto add = [&](const std::string& event) {
    if (!first) out += ",\n";
    first = false;
    out += event;
  };
  for (const auto& [device, pid] : pids)
    add(fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"args":{{"name":"{}"}}}})", pid,
                    json_escape(device)));
  for (const ProfileRecord& r : events_) {
    const int pid = pids.at(r.device);
    if (threads.emplace(pid, r.thread).second)
      add(fmt::format(
          R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":"{} thread {}"}}}})",
          pid, r.thread, json_escape(r.device), r.thread));
    const loom_profile_event_t e = view_of(r, base_ns_);
    std::string args = fmt::format(R"("run":{},"device":"{}","counted":{})", r.run,
                                   json_escape(r.device), r.leaf ? "true" : "false");
    if (!r.op_type.empty()) args += ",\"op_type\":\"" + json_escape(r.op_type) + "\"";
    if (!r.nodes.empty()) args += ",\"nodes\":\"" + json_escape(r.nodes) + "\"";
    if (!r.shapes.empty()) args += ",\"shapes\":\"" + json_escape(r.shapes) + "\"";
    if (!r.detail.empty()) args += ",\"detail\":\"" + json_escape(r.detail) + "\"";
    add(fmt::format(
        R"({{"name":"{}","cat":"{}","ph":"X","ts":{},"dur":{},"pid":{},"tid":{},"args":{{{}}}}})",
        json_escape(r.name), r.category, micros(e.start_ns), micros(e.end_ns - e.start_ns), pid,
        r.thread, args));
  }
  out += "]}\n";
  return out;
}

namespace {

// Time and count of a group of events.
struct Sum {
  uint64_t ns = 0;
  uint64_t count = 0;
};

struct NodeKey {
  std::string name, op_type, device;
  bool operator<(const NodeKey& o) const {
    return std::tie(name, op_type, device) < std::tie(o.name, o.op_type, o.device);
  }
};

// The events added up: per run, per (op type, device) and per node.
struct Tally {
  std::set<uint64_t> runs;
  Sum whole;  // "run" events
  uint64_t leaves = 0;
  std::map<std::pair<std::string, std::string>, Sum> by_type;  // (op type, device)
  std::map<NodeKey, Sum> by_node;
};

// Adds up `events`: every run, and the leaves (the steps' own times) by type and by node.
Tally tally(const std::vector<ProfileRecord>& events) {
  Tally t;
  for (const ProfileRecord& r : events) {
    t.runs.insert(r.run);
    const uint64_t ns = r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0;
    if (r.category == "run") {
      t.whole.ns += ns;
      ++t.whole.count;
    }
    if (!r.leaf) continue;
    t.leaves += ns;
    std::string type = r.op_type;
    if (r.category == "transfer") type = "(transfer)";
    if (r.category == "device") type = "(device step)";
    if (r.category == "subgraph") type = "(subgraph, no steps reported)";
    Sum& ts = t.by_type[{type, r.device}];
    ts.ns += ns;
    ++ts.count;
    if (r.category == "node" || r.category == "fused" || r.category == "host") {
      std::string name = r.name;
      if (r.category == "fused" && !r.nodes.empty()) name = r.nodes;
      Sum& n = t.by_node[{name, r.op_type, r.device}];
      n.ns += ns;
      ++n.count;
    }
  }
  return t;
}

// The entries of `map`, longest time first (ties in key order).
template <typename Map>
std::vector<std::pair<typename Map::key_type, Sum>> sorted(const Map& map) {
  std::vector<std::pair<typename Map::key_type, Sum>> v(map.begin(), map.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  return v;
}

// Per-run figures of the summary's tables: nanoseconds as ms, and as a share of a run.
struct PerRun {
  double nruns, run_ns;
  static double ms(double ns) { return ns / 1e6; }
  double share(double ns) const { return run_ns > 0 ? 100.0 * ns / run_ns : 0.0; }
};

// The "by op type" table.
std::string type_table(const Tally& t, const PerRun& p) {
  std::string out = "\nby op type (per run):\n";
  out += fmt::format("  {:<34} {:<12} {:>10} {:>7} {:>7} {:>10}\n", "op type", "device", "ms",
                     "share", "count", "mean us");
  for (const auto& [key, s] : sorted(t.by_type)) {
    const double per_run = static_cast<double>(s.ns) / p.nruns;
    out += fmt::format("  {:<34} {:<12} {:>10.3f} {:>6.1f}% {:>7.1f} {:>10.1f}\n", key.first,
                       key.second, PerRun::ms(per_run), p.share(per_run),
                       static_cast<double>(s.count) / p.nruns,
                       static_cast<double>(s.ns) / static_cast<double>(s.count) / 1e3);
  }
  return out;
}

// The "by node" table.
std::string node_table(const Tally& t, const PerRun& p) {
  // The node comes last: a fused step's name lists every node it computed, which no fixed
  // column width holds.
  std::string out = "\nby node (per run):\n";
  out += fmt::format("  {:>10} {:>7} {:>7} {:<12} {:<24} {}\n", "ms", "share", "count", "device",
                     "op type", "node");
  for (const auto& [key, s] : sorted(t.by_node)) {
    const double per_run = static_cast<double>(s.ns) / p.nruns;
    out += fmt::format("  {:>10.3f} {:>6.1f}% {:>7.1f} {:<12} {:<24} {}\n", PerRun::ms(per_run),
                       p.share(per_run), static_cast<double>(s.count) / p.nruns, key.device,
                       key.op_type, key.name);
  }
  return out;
}

}  // namespace

std::string Profiler::summary() const {
  std::lock_guard<std::mutex> lock(mutex_);
  const Tally t = tally(events_);
  PerRun p;
  p.nruns = static_cast<double>(std::max<size_t>(t.runs.size(), 1));
  p.run_ns = t.whole.count ? static_cast<double>(t.whole.ns) / static_cast<double>(t.whole.count)
                           : static_cast<double>(t.leaves) / p.nruns;
  const double leaves_per_run = static_cast<double>(t.leaves) / p.nruns;
  std::string out = fmt::format(
      "profile: {} run(s), {:.3f} ms per run; the steps below add up to {:.3f} ms ({:.1f}%), "
      "the rest is the core's own work (binding, plan lookup, scheduling)\n",
      t.runs.size(), PerRun::ms(p.run_ns), PerRun::ms(leaves_per_run), p.share(leaves_per_run));
  if (dropped_)
    out += fmt::format(
        "warning: {} events were dropped (the event limit was reached): the "
        "tables below miss them\n",
        dropped_);
  return out + type_table(t, p) + node_table(t, p);
}

}  // namespace loom::core
