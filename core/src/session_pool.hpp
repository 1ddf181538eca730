// Concurrent runs of one session (loom_session_options_t::max_concurrent_runs > 1). A Session
// runs one inference at a time: its plans hold per-run state (arenas in its executables, the
// values in flight) and a device's executable is never run twice at once (plugin ABI). The
// pool gives each concurrent run a Session of its own: the primary, or a replica created from
// the same model and options when every existing one is busy, up to the bound. Replicas share
// the devices' compiled weights where the device shares them (onednn's content-keyed cache) and
// the session's profiler; `threads` is split among them.
#pragma once

#include <loom/loom.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/graph.hpp"
#include "runtime.hpp"
#include "session.hpp"

namespace loom::core {

class SessionPool {
 public:
  // `options` as the application gave them; max_concurrent_runs > 1. Creates the primary.
  SessionPool(Runtime& runtime, std::shared_ptr<Model> model,
              const loom_session_options_t& options);
  ~SessionPool();
  SessionPool(const SessionPool&) = delete;
  SessionPool& operator=(const SessionPool&) = delete;

  // The session the read-only functions (explain, plan, stats) describe.
  Session& primary() { return *sessions_.front(); }

  // A session to run on, for the lifetime of the lease: a free one, a new replica while fewer
  // than the bound exist, else the first to come free.
  class Lease {
   public:
    Lease(SessionPool& pool, Session& session) : pool_(pool), session_(session) {}
    ~Lease() { pool_.give_back(session_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Session& operator*() const { return session_; }
    Session* operator->() const { return &session_; }

   private:
    SessionPool& pool_;
    Session& session_;
  };
  Lease acquire();

  void cancel();
  void profile_start(size_t max_events);
  void profile_stop();

  // The threads each session gets: max(1, budget / max_concurrent_runs).
  static int32_t threads_per_session(int32_t threads, int32_t max_concurrent_runs);

 private:
  void give_back(Session& session);

  Runtime& runtime_;
  std::shared_ptr<Model> model_;  // kept to compile replicas (weights included)
  // The options with owned strings, for replicas.
  std::string devices_, device_options_, placements_, cost_model_, shape_overrides_;
  loom_session_options_t options_{};
  size_t bound_;

  std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<std::unique_ptr<Session>> sessions_;  // guarded by mutex_ (grows only)
  std::vector<Session*> idle_;
  size_t creating_ = 0;  // replicas being compiled outside the lock
  std::atomic<uint64_t> cancel_generation_{0};
};

}  // namespace loom::core
