// The training progress display of `ablate run`: a bar redrawn in place on a terminal, plain
// periodic lines in logs and CI, nothing from updates under --quiet. The runner feeds it one
// sample per step; it decides what, and how often, to write.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>

namespace ablate::train {

struct ProgressSample {
  std::int64_t step = 0;  // optimizer steps completed
  double loss = 0.0;      // train loss of this step
  double lr = 0.0;
  double tokens_per_s = 0.0;  // recent training throughput (target tokens per second)
  double elapsed_s = 0.0;     // training wall time, shown as "elapsed" (may include time before a
                              // resume); the ETA does not use it, see Progress
};

enum class ProgressMode { Bar, Lines, Quiet };

// The decision behind detect_progress_mode, pure so it can be tested: Bar when `is_tty`, `ci` is
// null or empty, and `term` is not "dumb" (null counts as not dumb); Lines otherwise.
ProgressMode choose_progress_mode(bool is_tty, const char* ci, const char* term);

// Bar when `fd` is a terminal, the environment variable CI is unset or empty, and TERM is not
// "dumb"; Lines otherwise. (Quiet is only chosen by the caller, e.g. a --quiet flag.)
ProgressMode detect_progress_mode(int fd);

// A duration rounded to the second: "42s", "3m05s", "1h02m" (for ETA and elapsed). Negative
// values print as "0s", non-finite ones as "?".
std::string format_duration(double seconds);

// Writes the progress of one training run to `out`. Single-threaded: call from the step loop.
//   Bar:   one line, redrawn with '\r' + ESC[K at most every kBarRedrawInterval seconds (the
//          first sample and the last step are always drawn), e.g.
//          `step  420/1000 [########------------]  42% loss 1.234 lr 7.0e-04 12.3k tok/s ETA 1m05s`
//   Lines: one plain line when the step crosses a multiple of line_every, and for the last step:
//          `step 420/1000 loss 1.2340 lr 7.00e-04 12345 tok/s elapsed 31s ETA 44s`
//   Quiet: nothing from update(); message() still prints.
// The ETA counts only steps and time of this process: rate = (step - start_step) / (clock now -
// clock at construction), so construct it just before the step loop.
class Progress {
 public:
  // Monotonic seconds (any origin): times the ETA and throttles Bar redraws.
  using Clock = std::function<double()>;
  static constexpr double kBarRedrawInterval = 0.1;  // seconds
  static constexpr int kBarWidth = 20;               // characters between the brackets

  // total_steps: the run's last step; start_step: the step training (re)starts from (resume);
  // line_every: steps between lines in Lines mode (>= 1); now_s: defaults to a steady clock.
  // Throws ablate::Error unless 0 <= start_step <= total_steps and line_every >= 1.
  Progress(std::ostream& out, ProgressMode mode, std::int64_t total_steps, std::int64_t start_step, std::int64_t line_every,
           Clock now_s = {});
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Records the state after a step and writes it if the mode says so. Ignored after finish().
  void update(const ProgressSample& s);
  // A message (eval results, warnings) on its own line: in Bar mode clear the bar, print, redraw.
  void message(const std::string& line);
  // Ends the display (Bar: final state + newline; Lines: the last sample if not yet printed).
  // Safe to call twice; the destructor calls it.
  void finish();

 private:
  // The text of one display line for the latest sample, without control characters.
  std::string bar_line() const;
  std::string plain_line() const;
  std::string eta() const;
  void draw_bar();

  std::ostream& out_;
  ProgressMode mode_;
  std::int64_t total_steps_;
  std::int64_t start_step_;
  std::int64_t line_every_;
  Clock now_s_;
  double origin_s_;  // clock at construction: where this process's steps start

  std::optional<ProgressSample> latest_;  // the most recent sample, drawn or not
  double latest_s_ = 0.0;                 // clock at the update that brought `latest_`
  bool latest_shown_ = false;             // `latest_` is what the screen / log last showed
  bool bar_on_screen_ = false;            // Bar: a bar line is drawn and not yet ended by '\n'
  std::optional<double> last_draw_s_;     // Bar: clock time of the last redraw
  std::int64_t previous_step_;            // Lines: step of the previous update (for crossings)
  bool finished_ = false;
};

}  // namespace ablate::train
