// SweepDisplay (sweep_display.hpp).
#include "sweep/sweep_display.hpp"

#include "core/text.hpp"
#include "sweep/run_state.hpp"

namespace ablate::sweep {
namespace {
double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

void SweepDisplay::event(const std::string& line) {
  if (mode_ == train::ProgressMode::Quiet) return;
  clear();
  out_ << line << "\n";
  if (mode_ == train::ProgressMode::Bar && !status_.empty()) draw();
  out_.flush();
}

bool SweepDisplay::status_due() const {
  if (mode_ == train::ProgressMode::Bar) return !drawn_ || seconds_since(last_) >= kBarRedrawSeconds;
  return mode_ == train::ProgressMode::Lines && seconds_since(last_) >= kHeartbeatSeconds;
}

void SweepDisplay::status(const std::string& line) {
  status_ = fit_width(line, kLineWidth);
  if (!status_due()) return;
  if (mode_ == train::ProgressMode::Bar) {
    clear();
    draw();
  } else {
    out_ << status_ << "\n" << std::flush;
    last_ = std::chrono::steady_clock::now();
  }
}

void SweepDisplay::finish() {
  clear();
  out_.flush();
}

void SweepDisplay::clear() {
  if (drawn_) out_ << "\r\033[K";
  drawn_ = false;
}

void SweepDisplay::draw() {
  out_ << status_ << std::flush;
  drawn_ = true;
  last_ = std::chrono::steady_clock::now();
}

std::string running_steps(const std::vector<const Task*>& tasks) {
  std::vector<std::string> parts;
  for (const Task* t : tasks)
    parts.push_back(t->name + " " + std::to_string(read_run_phase(t->dir).step) + "/" + std::to_string(t->total_steps));
  return join(parts, "; ");
}

}  // namespace ablate::sweep
