#include "child_pool.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace loom::conformance {
namespace {

using Clock = std::chrono::steady_clock;

struct Child {
  size_t index;
  pid_t pid;
  int fd;  // read end of the result pipe
  Clock::time_point deadline;
  std::string message;
};

// The child's message on the pipe: one letter (P/F/S) and the reason.
std::string encode(const CaseResult& r) {
  char tag = r.outcome == Outcome::kPass ? 'P' : r.outcome == Outcome::kSkip ? 'S' : 'F';
  return std::string(1, tag) + r.reason;
}

CaseResult decode(const std::string& message, int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return {Outcome::kFail,
            fmt::format("crashed: signal {}{}", sig, name ? fmt::format(" (SIG{})", name) : "")};
  }
  if (message.empty())
    return {Outcome::kFail, fmt::format("exited with status {} without a result",
                                        WIFEXITED(status) ? WEXITSTATUS(status) : -1)};
  Outcome outcome = message[0] == 'P'   ? Outcome::kPass
                    : message[0] == 'S' ? Outcome::kSkip
                                        : Outcome::kFail;
  return {outcome, message.substr(1)};
}

void write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

[[noreturn]] void child_main(int fd, size_t index, const PoolSettings& settings,
                             const std::function<CaseResult(size_t)>& work) {
  if (settings.quiet_children) {
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
      close(null);
    }
  }
  if (settings.memory_limit_mb > 0) {
    rlimit limit{};
    limit.rlim_cur = limit.rlim_max = static_cast<rlim_t>(settings.memory_limit_mb) << 20;
    setrlimit(RLIMIT_AS, &limit);
  }
  CaseResult result;
  try {
    result = work(index);
  } catch (const std::bad_alloc&) {
    result = {Outcome::kFail, "out of memory"};
  } catch (const std::exception& e) {
    result = {Outcome::kFail, e.what()};
  }
  write_all(fd, encode(result));
  close(fd);
  // _exit: no atexit handlers or static destructors of the parent's state in the child.
  _exit(0);
}

Child spawn(size_t index, const PoolSettings& settings,
            const std::function<CaseResult(size_t)>& work) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  std::fflush(nullptr);  // or buffered parent output would be written twice
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    close(fds[0]);
    child_main(fds[1], index, settings, work);
  }
  close(fds[1]);
  fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  return Child{index, pid, fds[0], Clock::now() + settings.timeout, {}};
}

// Reads what is available; returns true at end of file.
bool drain(Child& child) {
  char buffer[4096];
  while (true) {
    ssize_t n = read(child.fd, buffer, sizeof buffer);
    if (n > 0) {
      child.message.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n == 0 || errno != EAGAIN;
  }
}

int reap(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

void run_in_children(size_t count, const PoolSettings& settings,
                     const std::function<CaseResult(size_t)>& work,
                     const std::function<void(size_t, const CaseResult&)>& done) {
  std::vector<Child> running;
  size_t next = 0;
  size_t jobs = settings.jobs > 0 ? settings.jobs : 1;
  while (next < count || !running.empty()) {
    while (next < count && running.size() < jobs) running.push_back(spawn(next++, settings, work));

    std::vector<pollfd> fds;
    auto now = Clock::now();
    auto wait = std::chrono::milliseconds(1000);
    for (const auto& c : running) {
      fds.push_back({c.fd, POLLIN, 0});
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(c.deadline - now);
      wait = std::max(std::chrono::milliseconds(0), std::min(wait, left));
    }
    int ready = poll(fds.data(), fds.size(), static_cast<int>(wait.count()) + 1);
    if (ready < 0 && errno != EINTR)
      throw std::runtime_error(fmt::format("poll: {}", std::strerror(errno)));

    now = Clock::now();
    for (size_t i = running.size(); i-- > 0;) {
      Child& c = running[i];
      bool finished = false;
      CaseResult result;
      if (fds[i].revents != 0 && drain(c)) {
        result = decode(c.message, reap(c.pid));
        finished = true;
      } else if (now >= c.deadline) {
        kill(c.pid, SIGKILL);
        reap(c.pid);
        result = {Outcome::kFail, fmt::format("timed out after {} s", settings.timeout.count())};
        finished = true;
      }
      if (!finished) continue;
      close(c.fd);
      size_t index = c.index;
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      done(index, result);
    }
  }
}

}  // namespace loom::conformance
