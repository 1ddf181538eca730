// --profile and --profile-summary: where the timed runs' profile goes (docs/profiling.md).
#pragma once

#include <loom/loom.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom::infer_run {

// A file written whole or not at all: a temporary beside it, opened at once (so an unwritable
// path is a usage error before the model runs), renamed over the path by commit(). Removed
// when destroyed uncommitted (a failed run leaves no half-written trace behind).
class AtomicFile {
 public:
  // Throws AppError (usage) naming `option`, the path and why it cannot be written.
  AtomicFile(std::string option, std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Throws AppError (runtime) when the bytes cannot be written or renamed into place.
  void commit(std::string_view text);
  const std::string& path() const { return path_; }

 private:
  std::string option_, path_, temp_;
  int fd_ = -1;
};

// One row of the per-op-type or per-node table, per profiled run.
struct ProfileRow {
  std::string name;  // the op type; for a node its name (a fused step's: the nodes it computed)
  std::string op_type, device;
  uint64_t total_ns = 0;  // over every run
  uint64_t count = 0;     // over every run
  double ms = 0;          // per run
  double share = 0;       // percent of the mean run time
  double count_per_run = 0;
};

// The profile as loom_session_profile_summary tabulates it, computed from the events
// (loom_session_profile_events) so that --json carries numbers rather than a table's text.
struct ProfileStats {
  size_t runs = 0;      // distinct profiled runs
  size_t events = 0;    // recorded
  size_t dropped = 0;   // past the session's event limit
  double run_ms = 0;    // mean time of a whole run
  double steps_ms = 0;  // per run, the leaf steps (they do not overlap; the rest is the core's)
  std::vector<ProfileRow> by_op_type, by_node;  // most time first
};

ProfileStats collect_profile(loom_session_t* session);

// The "profile" object of the JSON report.
std::string profile_json(const ProfileStats& stats, int session, int sessions,
                         const std::string& trace_path);

}  // namespace loom::infer_run
