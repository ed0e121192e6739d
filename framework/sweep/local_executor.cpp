// run_local (local_executor.hpp): fork/exec of `ablate run` children, a poll loop that reaps
// them, starts the next ones and redraws the display, and the stop protocol.
#include "sweep/local_executor.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>
#include <thread>

#include "ablate/error.hpp"
#include "core/text.hpp"
#include "results/run_file.hpp"
#include "sweep/sweep_display.hpp"

namespace ablate::sweep {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;
std::atomic<bool> g_stop{false};

constexpr auto kPollInterval = std::chrono::milliseconds(200);

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Starts `executable args...` with stdout and stderr appended to `log`; the child gets SIGTERM
// when this process dies.
pid_t spawn(const fs::path& executable, const Task& task, const fs::path& log) {
  std::vector<std::string> words{executable.string()};
  words.insert(words.end(), task.args.begin(), task.args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);

  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
  if (fd < 0)
    throw Error("cannot open the run log " + log.string() + ": " + std::strerror(errno),
                "check that the sweep directory is writable");
  const std::string header = "== " + results::utc_now_iso8601() + " ablate sweep starts: " + join(words, " ") + "\n";
  if (::write(fd, header.data(), header.size()) < 0) { /* the log is best effort; the run itself records its results */
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(fd);
    throw Error(std::string("cannot start a run process: fork failed: ") + std::strerror(e), "is the process limit reached?");
  }
  if (pid == 0) {  // the child: only async-signal-safe calls until exec
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(130);  // the sweep died before the line above took effect
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    ::execv(argv[0], argv.data());
    static const char msg[] = "ablate sweep: cannot execute the ablate program\n";
    if (::write(STDERR_FILENO, msg, sizeof msg - 1) < 0) { /* nothing more to do */
    }
    ::_exit(127);
  }
  ::close(fd);
  return pid;
}

struct Child {
  std::size_t task;
  pid_t pid;
  Clock::time_point start;
};

// head + middle + tail in at most `width` bytes: the middle cut to what head and tail leave (left
// out when under 14 bytes would be left), then the whole line if it is still longer.
std::string fit_line(const std::string& head, const std::string& middle, const std::string& tail, std::size_t width) {
  const std::size_t used = head.size() + tail.size();
  const std::string kept = width >= used + 14 ? fit_width(middle, width - used) : std::string();
  return fit_width(head + kept + tail, std::max<std::size_t>(width, 3));
}

}  // namespace

std::string ended_line(const TaskOutcome& o, std::size_t finished, std::size_t total, std::size_t width) {
  std::string what = to_string(o.phase.phase);
  if (o.failed() && o.phase.phase != RunPhase::Failed) what = "failed";
  std::ostringstream head;
  head << "[" << finished << "/" << total << "] " << what << "  " << o.name;
  if (o.phase.phase != RunPhase::Pending) head << ": step " << o.phase.step;
  const std::string tail = " (" + train::format_duration(o.seconds) + ")";
  const std::string& reason = o.phase.reason;  // where it says more than "done" does
  const bool says_more = !reason.empty() && reason != "reached train.steps";
  std::string line = fit_line(head.str(), says_more ? ", " + reason : std::string(), tail, width);
  if (o.failed()) line += "\n    log: " + o.log.string();  // a path is not cut
  return line;
}

bool TaskOutcome::failed() const {
  if (phase.phase == RunPhase::Failed) return true;
  // An `ablate run` that stopped in error before it recorded a run (a bad spec, a missing plugin).
  return started && phase.phase == RunPhase::Pending && exit_code != 0 && exit_code != 130;
}

void request_stop() { g_stop.store(true); }
bool stop_requested() { return g_stop.load(); }

std::string tail_lines(const fs::path& file, std::size_t n) {
  std::ifstream in(file);
  std::deque<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (lines.size() > n) lines.pop_front();
  }
  return join(std::vector<std::string>(lines.begin(), lines.end()), "\n");
}

// The last "ablate: ..." line of a child's log (its error message), or "".
std::string last_error_line(const fs::path& log) {
  std::ifstream in(log);
  std::string found;
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("ablate: ")) found = line.substr(8);
  return found;
}

LocalReport run_local(const fs::path& executable, const std::vector<Task>& tasks, const LocalOptions& options,
                      std::ostream& out) {
  if (options.jobs < 1) throw UsageError("--jobs must be at least 1, got " + std::to_string(options.jobs));
  g_stop.store(false);
  LocalReport report;
  for (const Task& t : tasks) {
    TaskOutcome o;
    o.name = t.name;
    o.dir = t.dir;
    o.log = t.dir / "ablate.log";
    report.outcomes.push_back(std::move(o));
  }
  SweepDisplay display(out, options.progress);
  const auto sweep_start = Clock::now();
  std::vector<Child> running;
  std::size_t next = 0, finished = 0;
  bool forwarded = false;

  auto reap = [&](const Child& c, int status) {
    TaskOutcome& o = report.outcomes[c.task];
    o.seconds = seconds_since(c.start);
    if (WIFEXITED(status)) o.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
    o.phase = read_run_phase(o.dir);
    const bool clean_exit = !o.signal && (o.exit_code == 0 || o.exit_code == 4 || o.exit_code == 130);
    // A child that crashed mid-run (the file says running), or that failed while resuming an
    // interrupted run (the file still says interrupted): record it as failed, so it is counted and
    // listed, and the next sweep does not resume it blindly.
    if (!clean_exit && !g_stop.load() && (o.phase.writer_died || o.phase.phase == RunPhase::Interrupted)) {
      std::string reason = o.signal ? std::string("ablate run was killed by signal ") + ::strsignal(o.signal)
                                    : "ablate run exited with status " + std::to_string(o.exit_code);
      if (const std::string error = last_error_line(o.log); !error.empty()) reason += ": " + error;
      try {
        results::RunWriter::record_end(o.dir / "run.h5",
                                       {results::RunStatus::Failed, reason, o.phase.step, results::utc_now_iso8601()});
        o.phase = read_run_phase(o.dir);
      } catch (const std::exception& e) {
        o.phase.phase = RunPhase::Failed;
        o.phase.reason = reason + " (could not record it in run.h5: " + e.what() + ")";
      }
    } else if (o.failed() && o.phase.reason.empty()) {
      o.phase.reason = "ablate run exited with status " + std::to_string(o.exit_code) + " before recording a run";
      if (const std::string error = last_error_line(o.log); !error.empty()) o.phase.reason += ": " + error;
    }
    display.event(ended_line(o, ++finished, tasks.size(), SweepDisplay::kLineWidth));
  };

  while (true) {
    if (g_stop.load() && !forwarded) {
      forwarded = true;
      report.interrupted = true;
      if (!running.empty())
        display.event("stopping: " + std::to_string(running.size()) + " running run(s) checkpoint and stop; nothing new starts");
      for (const Child& c : running) ::kill(c.pid, SIGTERM);
    }
    while (!g_stop.load() && running.size() < static_cast<std::size_t>(options.jobs) && next < tasks.size()) {
      const Task& t = tasks[next];
      std::error_code ec;
      fs::create_directories(t.dir, ec);
      if (ec)
        throw Error("cannot create the run directory " + t.dir.string() + ": " + ec.message(),
                    "check that the sweep directory is writable");
      running.push_back({next, spawn(executable, t, report.outcomes[next].log), Clock::now()});
      report.outcomes[next].started = true;
      display.event(fit_width("start  " + t.name + (t.resume ? " (resuming)" : ""), SweepDisplay::kLineWidth));
      ++next;
    }
    if (running.empty()) break;

    bool reaped = false;
    for (std::size_t i = 0; i < running.size(); ++i) {
      int status = 0;
      const pid_t r = ::waitpid(running[i].pid, &status, WNOHANG);
      if (r == running[i].pid || (r < 0 && errno == ECHILD)) {
        reap(running[i], r < 0 ? 0 : status);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
        reaped = true;
        break;
      }
    }
    if (reaped) continue;

    if (display.status_due()) {  // the line reads every running run's file: only when it is shown
      std::vector<const Task*> active;
      for (const Child& c : running) active.push_back(&tasks[c.task]);
      const std::string head = "sweep: " + std::to_string(finished) + "/" + std::to_string(tasks.size()) + " finished, ";
      const std::string tail = (next < tasks.size() ? ", " + std::to_string(tasks.size() - next) + " waiting" : std::string()) +
                               " (" + train::format_duration(seconds_since(sweep_start)) + ")";
      display.status(fit_line(head, "running: " + running_steps(active), tail, SweepDisplay::kLineWidth));
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  display.finish();
  if (g_stop.load()) report.interrupted = true;
  return report;
}

}  // namespace ablate::sweep
