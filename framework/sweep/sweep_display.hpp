// The sweep's progress display, shared by the executors: event lines (a run started or ended)
// and one status line (the runs' steps), redrawn in place on a terminal (Bar), printed once a
// minute (Lines), or not at all (Quiet).
#pragma once

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

#include "sweep/local_executor.hpp"
#include "train/progress.hpp"

namespace ablate::sweep {

class SweepDisplay {
 public:
  static constexpr double kBarRedrawSeconds = 1.0;
  static constexpr double kHeartbeatSeconds = 60.0;  // Lines: a status line this often
  // The widest line it prints (a wrapped bar cannot be redrawn in place; a log stays readable);
  // longer status lines are cut, event lines are fitted by their makers (ended_line).
  static constexpr std::size_t kLineWidth = 100;

  SweepDisplay(std::ostream& out, train::ProgressMode mode) : out_(out), mode_(mode) {}
  ~SweepDisplay() { finish(); }
  SweepDisplay(const SweepDisplay&) = delete;
  SweepDisplay& operator=(const SweepDisplay&) = delete;

  void event(const std::string& line);  // printed on its own line (not under Quiet)
  // Whether status() would show a line now: callers build the line (which reads run files) only then.
  bool status_due() const;
  void status(const std::string& line);  // the current state; shown as the mode says
  void finish();                         // clears a drawn status line

 private:
  void clear();
  void draw();

  std::ostream& out_;
  train::ProgressMode mode_;
  std::string status_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// "name 340/1000; name 120/1000": each task's last recorded step, read from its run file.
std::string running_steps(const std::vector<const Task*>& tasks);

}  // namespace ablate::sweep
