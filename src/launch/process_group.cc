#include "process_group.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <thread>

extern char** environ;

namespace drtmx::bench {
namespace {
// A pipe's default capacity: spawn() writes the input before the child runs.
constexpr size_t kMaxInput = 65536;
}  // namespace

std::string self_exe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  buf[n] = 0;
  return buf;
}

ProcessGroup::~ProcessGroup() {
  kill_all();
}

Status ProcessGroup::spawn(const std::string& name, const std::string& exe,
                           const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> all;
  all.push_back(exe);
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The input goes through a pipe whose ends are close-on-exec here: only
  // this child gets the read end (as its standard input), and no child
  // keeps the write end open (the child sees the end of its input).
  int pipe_fds[2] = {-1, -1};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!input.empty()) {
    if (input.size() > kMaxInput || pipe2(pipe_fds, O_CLOEXEC) != 0) {
      posix_spawn_file_actions_destroy(&actions);
      return io_error("starting " + name + ": a pipe for its input",
                      input.size() > kMaxInput ? E2BIG : errno);
    }
    // The whole input fits the pipe's buffer: written before the child runs.
    const bool written =
        ::write(pipe_fds[1], input.data(), input.size()) == static_cast<ssize_t>(input.size());
    close(pipe_fds[1]);
    if (!written) {
      close(pipe_fds[0]);
      posix_spawn_file_actions_destroy(&actions);
      return io_error("starting " + name + ": writing its input", errno);
    }
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[0], 0);
  }
  pid_t pid = 0;
  int err = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (pipe_fds[0] >= 0) close(pipe_fds[0]);
  if (err != 0) return io_error("starting " + name + " (" + exe + ")", err);
  children_.push_back({name, pid, false});
  return Status::ok();
}

void ProcessGroup::note(Child& c, int st) {
  c.done = true;
  if (WIFSIGNALED(st)) c.signal = WTERMSIG(st);
  if (WIFEXITED(st)) c.exit_code = WEXITSTATUS(st);
}

std::vector<ProcessGroup::Ended> ProcessGroup::ended() const {
  std::vector<Ended> out;
  for (const Child& c : children_) out.push_back({c.name, c.signal, c.exit_code});
  return out;
}

void ProcessGroup::signal_all(int sig) {
  for (const Child& c : children_) {
    if (!c.done) kill(c.pid, sig);
  }
}

void ProcessGroup::expect_end(size_t index) {
  if (index < children_.size()) children_[index].any_end = true;
}

bool ProcessGroup::signal_one(size_t index, int sig) {
  if (index >= children_.size() || children_[index].done) return false;
  return ::kill(children_[index].pid, sig) == 0;
}

bool ProcessGroup::kill_one(size_t index, int sig) {
  if (index >= children_.size() || children_[index].done) return false;
  children_[index].expected_signal = sig;
  return ::kill(children_[index].pid, sig) == 0;
}

Status ProcessGroup::wait_all(std::chrono::milliseconds timeout,
                              const std::function<void()>& poll) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  Status first;
  auto running = [&] {
    size_t n = 0;
    for (auto& c : children_) n += !c.done;
    return n;
  };
  // Reaps every child that ended; remembers the first killed by a signal
  // and the first that exited with an error. Returns whether any ended.
  std::string signaled, failed;
  auto reap = [&] {
    bool reaped = false;
    for (auto& c : children_) {
      if (c.done) continue;
      int st = 0;
      pid_t r = waitpid(c.pid, &st, WNOHANG);
      if (r == 0) continue;
      c.done = true;
      reaped = true;
      if (r < 0) continue;
      note(c, st);
      if (c.any_end ||
          (WIFSIGNALED(st) && c.expected_signal != 0 && WTERMSIG(st) == c.expected_signal)) {
        continue;  // killed or stopped on purpose (kill_one, expect_end)
      }
      if (WIFSIGNALED(st) && signaled.empty()) {
        signaled = c.name + " was killed by signal " + std::to_string(WTERMSIG(st));
      } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0 && failed.empty()) {
        failed = c.name + " exited with status " + std::to_string(WEXITSTATUS(st)) +
                 " (its error is printed above)";
      }
    }
    return reaped;
  };
  while (running() > 0) {
    // Reap every child that ended before choosing what to report: a node
    // killed by a signal is the cause and the others' error exits ("node 1
    // disconnected") its consequences, whichever the loop meets first.
    const bool reaped = reap();
    if (first.is_ok() && signaled.empty() && !failed.empty()) {
      // The peers of a killed node may see its connections close (the
      // kernel closes them while the process is torn down) and exit before
      // it can be reaped: give the rest a bounded moment to end, so the
      // cause is the one reported.
      const auto grace = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
      while (signaled.empty() && running() > 0 && std::chrono::steady_clock::now() < grace) {
        if (!reap()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
    if ((!signaled.empty() || !failed.empty()) && first.is_ok()) {
      first = unavailable(!signaled.empty() ? signaled : failed);
      kill_all();  // the rest cannot finish without it (marks them done)
    }
    if (running() == 0) break;
    if (std::chrono::steady_clock::now() > until) {
      kill_all();
      return timeout_error("node processes did not finish within " +
                           std::to_string(timeout.count()) + " ms; stopped them");
    }
    if (poll) poll();
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return first;
}

void ProcessGroup::kill_all() {
  bool any = false;
  for (auto& c : children_) {
    if (!c.done) {
      kill(c.pid, stop_signal_);
      any = true;
    }
  }
  if (!any) return;
  const auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (auto& c : children_) {
    while (!c.done) {
      int st = 0;
      pid_t r = waitpid(c.pid, &st, WNOHANG);
      if (r != 0) {
        if (r > 0) note(c, st);
        c.done = true;
        break;
      }
      if (std::chrono::steady_clock::now() > grace) {
        kill(c.pid, SIGKILL);
        if (waitpid(c.pid, &st, 0) > 0) note(c, st);
        c.done = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

}  // namespace drtmx::bench
