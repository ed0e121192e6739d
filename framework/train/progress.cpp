// Implementation of the training progress display declared in progress.hpp: mode detection,
// duration formatting, and the Bar / Lines / Quiet writers.
#include "train/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "ablate/error.hpp"

namespace ablate::train {
namespace {

constexpr std::string_view kEraseToEol = "\x1b[K";

// printf into a std::string; every caller's output is short.
template <typename... Args>
std::string format(const char* fmt, Args... args) {
  char buf[64];
  const int n = std::snprintf(buf, sizeof buf, fmt, args...);
  return std::string(buf, static_cast<std::size_t>(std::clamp(n, 0, static_cast<int>(sizeof buf) - 1)));
}

// "nan", "inf", "-inf" spelled the same everywhere, whatever the C library does with %f.
std::optional<std::string> non_finite(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return std::nullopt;
}

std::string number(const char* fmt, double v) {
  if (auto s = non_finite(v)) return *s;
  return format(fmt, v);
}

// Throughput for the bar: "987", "12.3k", "4.5M".
std::string compact_rate(double v) {
  if (auto s = non_finite(v)) return *s;
  if (std::fabs(v) < 999.5) return format("%.0f", v);
  if (std::fabs(v) < 999.95e3) return format("%.1fk", v / 1e3);
  return format("%.1fM", v / 1e6);
}

int digits(std::int64_t v) { return static_cast<int>(std::to_string(v).size()); }

double steady_now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

ProgressMode choose_progress_mode(bool is_tty, const char* ci, const char* term) {
  const bool under_ci = ci != nullptr && *ci != '\0';
  const bool dumb = term != nullptr && std::strcmp(term, "dumb") == 0;
  return is_tty && !under_ci && !dumb ? ProgressMode::Bar : ProgressMode::Lines;
}

ProgressMode detect_progress_mode(int fd) {
  return choose_progress_mode(::isatty(fd) == 1, std::getenv("CI"), std::getenv("TERM"));
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds)) return "?";
  // Clamped so the rounding cannot overflow; 1e15 s is far beyond any ETA worth reading.
  const long long total = std::llround(std::clamp(seconds, 0.0, 1e15));
  if (total < 60) return format("%llds", total);
  if (total < 3600) return format("%lldm%02llds", total / 60, total % 60);
  return format("%lldh%02lldm", total / 3600, total / 60 % 60);
}

Progress::Progress(std::ostream& out, ProgressMode mode, std::int64_t total_steps, std::int64_t start_step,
                   std::int64_t line_every, Clock now_s)
    : out_(out),
      mode_(mode),
      total_steps_(total_steps),
      start_step_(start_step),
      line_every_(line_every),
      now_s_(now_s ? std::move(now_s) : Clock(steady_now_s)),
      origin_s_(now_s_()),
      previous_step_(start_step) {
  if (start_step < 0 || start_step > total_steps)
    throw Error("progress display: start step " + std::to_string(start_step) + " is outside [0, " + std::to_string(total_steps) +
                    "] (total steps)",
                "a run resumed from a checkpoint must start before its last step");
  if (line_every < 1) throw Error("progress display: line_every must be >= 1, got " + std::to_string(line_every));
}

Progress::~Progress() {
  try {
    finish();
  } catch (...) {
    // A destructor must not throw (e.g. from a stream with exceptions enabled); the display is
    // cosmetic, so losing its last line is the lesser harm.
  }
}

std::string Progress::eta() const {
  const ProgressSample& s = *latest_;
  if (s.step >= total_steps_) return "0s";
  const auto done = s.step - start_step_;
  const double spent = latest_s_ - origin_s_;
  if (done <= 0 || !(spent > 0.0)) return "?";
  return format_duration(spent / static_cast<double>(done) * static_cast<double>(total_steps_ - s.step));
}

std::string Progress::bar_line() const {
  const ProgressSample& s = *latest_;
  // Integer arithmetic, so 290/1000 is 29% and not 28.999...%.
  const std::int64_t step = std::clamp<std::int64_t>(s.step, 0, total_steps_);
  const auto part = [&](std::int64_t of) { return static_cast<int>(total_steps_ > 0 ? step * of / total_steps_ : of); };
  const int filled = part(kBarWidth);
  std::string line =
      format("step %*lld/%lld [", digits(total_steps_), static_cast<long long>(s.step), static_cast<long long>(total_steps_));
  line.append(static_cast<std::size_t>(filled), '#');
  line.append(static_cast<std::size_t>(kBarWidth - filled), '-');
  line += format("] %3d%%", part(100));
  line.append(" loss ").append(number("%.3f", s.loss));
  line.append(" lr ").append(number("%.1e", s.lr));
  line.append(" ").append(compact_rate(s.tokens_per_s)).append(" tok/s");
  // Once the run is complete the ETA says nothing; the time it took does.
  if (s.step >= total_steps_)
    line.append(" elapsed ").append(format_duration(s.elapsed_s));
  else
    line.append(" ETA ").append(eta());
  return line;
}

std::string Progress::plain_line() const {
  const ProgressSample& s = *latest_;
  std::string line = format("step %lld/%lld", static_cast<long long>(s.step), static_cast<long long>(total_steps_));
  line.append(" loss ").append(number("%.4f", s.loss));
  line.append(" lr ").append(number("%.2e", s.lr));
  line.append(" ").append(number("%.0f", s.tokens_per_s)).append(" tok/s");
  line.append(" elapsed ").append(format_duration(s.elapsed_s));
  line.append(" ETA ").append(eta());
  return line;
}

void Progress::draw_bar() {
  out_ << '\r' << bar_line() << kEraseToEol << std::flush;
  bar_on_screen_ = true;
  latest_shown_ = true;
}

void Progress::update(const ProgressSample& s) {
  if (finished_) return;
  latest_ = s;
  latest_s_ = now_s_();
  latest_shown_ = false;
  switch (mode_) {
    case ProgressMode::Bar:
      if (!last_draw_s_ || latest_s_ - *last_draw_s_ >= kBarRedrawInterval || s.step >= total_steps_) {
        draw_bar();
        last_draw_s_ = latest_s_;
      }
      break;
    case ProgressMode::Lines: {
      // A crossing rather than `step % line_every == 0`, so a caller that skips steps still logs.
      const bool crossed = s.step / line_every_ != previous_step_ / line_every_;
      previous_step_ = s.step;
      if (crossed || s.step >= total_steps_) {
        out_ << plain_line() << '\n' << std::flush;
        latest_shown_ = true;
      }
      break;
    }
    case ProgressMode::Quiet: break;
  }
}

void Progress::message(const std::string& line) {
  if (bar_on_screen_) {
    out_ << '\r' << kEraseToEol << line << '\n';
    draw_bar();  // the bar comes back below the message
    out_ << std::flush;
    return;
  }
  out_ << line << '\n' << std::flush;
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  switch (mode_) {
    case ProgressMode::Bar:
      if (latest_ && !latest_shown_) draw_bar();
      if (bar_on_screen_) {
        out_ << '\n' << std::flush;
        bar_on_screen_ = false;
      }
      break;
    case ProgressMode::Lines:
      // A run that stops early (divergence, interrupt) still logs where it stopped.
      if (latest_ && !latest_shown_) out_ << plain_line() << '\n' << std::flush;
      break;
    case ProgressMode::Quiet: break;
  }
}

}  // namespace ablate::train
