#include "session_pool.hpp"

#include <algorithm>
#include <thread>

#include "status.hpp"

namespace loom::core {

int32_t SessionPool::threads_per_session(int32_t threads, int32_t max_concurrent_runs) {
  const int32_t budget =
      threads > 0 ? threads
                  : std::max(1, static_cast<int32_t>(std::thread::hardware_concurrency()));
  return std::max(1, budget / std::max(1, max_concurrent_runs));
}

SessionPool::SessionPool(Runtime& runtime, std::shared_ptr<Model> model,
                         const loom_session_options_t& options)
    : runtime_(runtime), model_(std::move(model)) {
  if (options.max_concurrent_runs < 0 || options.max_concurrent_runs > max_session_threads())
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         "max_concurrent_runs = " + std::to_string(options.max_concurrent_runs) +
             " is out of range: give 0 or 1 (one run at a time) or up to " +
             std::to_string(max_session_threads()));
  bound_ = static_cast<size_t>(std::max(1, options.max_concurrent_runs));
  options_ = options;
  auto own = [](const char* text, std::string& keep) -> const char* {
    if (!text) return nullptr;
    keep = text;
    return keep.c_str();
  };
  options_.devices = own(options.devices, devices_);
  options_.device_options = own(options.device_options, device_options_);
  options_.placements = own(options.placements, placements_);
  options_.cost_model = own(options.cost_model, cost_model_);
  options_.shape_overrides = own(options.shape_overrides, shape_overrides_);
  if (options.threads < 0 || options.threads > max_session_threads())
    fail(LOOM_ERROR_INVALID_ARGUMENT, "threads = " + std::to_string(options.threads) +
                                          " is out of range: give 0 (one per core) or a count "
                                          "up to " +
                                          std::to_string(max_session_threads()));
  options_.threads = threads_per_session(options.threads, options.max_concurrent_runs);
  options_.max_concurrent_runs = 1;
  sessions_.push_back(std::make_unique<Session>(runtime_, model_, options_));
  idle_.push_back(sessions_.back().get());
}

SessionPool::~SessionPool() = default;

SessionPool::Lease SessionPool::acquire() {
  // A run waiting here for a session is cancelled by loom_session_cancel like one in progress.
  const uint64_t generation = cancel_generation_.load(std::memory_order_acquire);
  auto check_cancel = [&] {
    if (cancel_generation_.load(std::memory_order_acquire) != generation)
      fail(LOOM_ERROR_CANCELLED, "the run was cancelled (loom_session_cancel)");
  };
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    check_cancel();
    if (!idle_.empty()) {
      Session* s = idle_.back();
      idle_.pop_back();
      return Lease(*this, *s);
    }
    if (sessions_.size() + creating_ < bound_) break;
    freed_.wait(lock);
  }
  // Compiling a replica takes as long as creating the session did: not under the lock, so
  // that runs finishing meanwhile can hand their sessions on.
  ++creating_;
  lock.unlock();
  std::unique_ptr<Session> replica;
  try {
    replica = std::make_unique<Session>(runtime_, model_, options_);
  } catch (...) {
    lock.lock();
    --creating_;
    freed_.notify_one();
    throw;
  }
  lock.lock();
  --creating_;
  // Profiling may have started while the replica compiled: it joins the primary's profiler.
  if (std::shared_ptr<Profiler> profiler = sessions_.front()->profiler())
    replica->share_profiler(profiler);
  sessions_.push_back(std::move(replica));
  return Lease(*this, *sessions_.back());
}

void SessionPool::give_back(Session& session) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_.push_back(&session);
  }
  freed_.notify_one();
}

void SessionPool::cancel() {
  cancel_generation_.fetch_add(1, std::memory_order_acq_rel);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& s : sessions_) s->cancel();
  }
  freed_.notify_all();  // waiting runs see the cancellation
}

void SessionPool::profile_start(size_t max_events) {
  std::lock_guard<std::mutex> lock(mutex_);
  sessions_.front()->profile_start(max_events);
  std::shared_ptr<Profiler> profiler = sessions_.front()->profiler();
  for (size_t i = 1; i < sessions_.size(); ++i) sessions_[i]->share_profiler(profiler);
}

void SessionPool::profile_stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  sessions_.front()->profile_stop();  // the profiler is shared: this stops every replica's
}

}  // namespace loom::core
