// Tests for framework/train/progress: the Lines / Bar / Quiet writers against a string stream and
// a fake clock, the resume-aware ETA, duration formatting, and the terminal/CI mode decision.
#include "train/progress.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ablate/error.hpp"

namespace ablate::train {
namespace {

const std::string kEsc = "\x1b[K";

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + needle.size())) ++n;
  return n;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

ProgressSample sample(std::int64_t step, double elapsed_s = 1.0) {
  return {.step = step, .loss = 1.234, .lr = 7e-4, .tokens_per_s = 12345.0, .elapsed_s = elapsed_s};
}

// A clock the test moves by hand.
struct FakeClock {
  double t = 100.0;
  Progress::Clock fn() {
    return [this] { return t; };
  }
};

// Updates `p` with steps 1 .. last, the clock moving `seconds` after each.
void update_steps(Progress& p, FakeClock& clock, std::int64_t last, double seconds) {
  for (std::int64_t step = 1; step <= last; ++step) {
    p.update(sample(step));
    clock.t += seconds;
  }
}

// Sets (or unsets, with nullptr) an environment variable for one scope and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

TEST(ProgressLines, PrintsOneLinePerIntervalPlusTheLastWithoutControlCharacters) {
  FakeClock clock;
  std::ostringstream out;
  {
    Progress p(out, ProgressMode::Lines, 1000, 0, 300, clock.fn());
    for (std::int64_t step = 1; step <= 1000; ++step) {
      clock.t += 0.1;
      p.update(sample(step, 0.1 * static_cast<double>(step)));
    }
    p.finish();
    p.finish();  // twice is harmless
  }              // and so is the destructor
  const auto lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 4u) << out.str();
  EXPECT_EQ(lines[0], "step 300/1000 loss 1.2340 lr 7.00e-04 12345 tok/s elapsed 30s ETA 1m10s");
  EXPECT_EQ(lines[1].rfind("step 600/1000 ", 0), 0u);
  EXPECT_EQ(lines[2].rfind("step 900/1000 ", 0), 0u);
  EXPECT_EQ(lines[3], "step 1000/1000 loss 1.2340 lr 7.00e-04 12345 tok/s elapsed 1m40s ETA 0s");
  EXPECT_EQ(out.str().find('\r'), std::string::npos);
  EXPECT_EQ(out.str().find('\x1b'), std::string::npos);
  EXPECT_EQ(out.str().back(), '\n');
}

TEST(ProgressLines, CountsIntervalsFromAbsoluteStepsAfterResume) {
  std::ostringstream out;
  Progress p(out, ProgressMode::Lines, 1000, 500, 100);
  for (std::int64_t step = 501; step <= 1000; ++step) p.update(sample(step));
  const auto lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 5u) << out.str();
  for (std::size_t i = 0; i < lines.size(); ++i)
    EXPECT_EQ(lines[i].rfind("step " + std::to_string(600 + 100 * i) + "/1000 ", 0), 0u) << lines[i];
}

TEST(ProgressLines, LogsWhereAnEarlyStopEndedAndStepsSkippedByTheCaller) {
  std::ostringstream out;
  Progress p(out, ProgressMode::Lines, 1000, 0, 100);
  for (std::int64_t step = 7; step <= 437; step += 7) p.update(sample(step));  // never a multiple of 100
  EXPECT_EQ(lines_of(out.str()).size(), 4u) << out.str();                      // crossed 100, 200, 300, 400
  p.finish();
  p.finish();
  const auto lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 5u) << out.str();
  EXPECT_EQ(lines[0].rfind("step 105/1000 ", 0), 0u);
  EXPECT_EQ(lines[4].rfind("step 434/1000 ", 0), 0u);
}

TEST(ProgressBar, RedrawsOneLineInPlaceAndEndsItAtFinish) {
  FakeClock clock;
  std::ostringstream out;
  Progress p(out, ProgressMode::Bar, 1000, 0, 100, clock.fn());
  clock.t += 42.0;
  p.update(sample(420, 42.0));
  const std::string bar = "step  420/1000 [########------------]  42% loss 1.234 lr 7.0e-04 12.3k tok/s ETA 58s";
  EXPECT_EQ(out.str(), "\r" + bar + kEsc);
  clock.t += 0.5;
  p.update(sample(421, 42.1));
  EXPECT_EQ(count(out.str(), "\r"), 2u);
  EXPECT_EQ(count(out.str(), kEsc), 2u);
  EXPECT_EQ(out.str().find('\n'), std::string::npos);  // still one line on screen
  p.finish();
  EXPECT_EQ(out.str().back(), '\n');
  EXPECT_EQ(count(out.str(), "\n"), 1u);
}

TEST(ProgressBar, ThrottlesRedrawsButAlwaysDrawsTheLastStateAtFinish) {
  FakeClock clock;
  std::ostringstream out;
  Progress p(out, ProgressMode::Bar, 1000, 0, 100, clock.fn());
  update_steps(p, clock, 100, 0.0005);  // 100 updates in 0.05 s
  EXPECT_LE(count(out.str(), "\rstep "), 2u);
  EXPECT_EQ(out.str().find("step  100/1000"), std::string::npos);
  p.finish();
  const std::string text = out.str();
  const auto last_draw = text.rfind("\rstep ");
  ASSERT_NE(last_draw, std::string::npos);
  EXPECT_EQ(text.compare(last_draw, 15, "\rstep  100/1000"), 0) << text;
  EXPECT_LE(count(text, "\rstep "), 2u);
  EXPECT_EQ(text.back(), '\n');
}

TEST(ProgressBar, RedrawsWhenTheIntervalPassesAndAlwaysAtTheLastStep) {
  FakeClock clock;
  std::ostringstream out;
  Progress p(out, ProgressMode::Bar, 10, 0, 1, clock.fn());
  update_steps(p, clock, 5, 0.25);  // each past the redraw interval
  EXPECT_EQ(count(out.str(), "\rstep "), 5u);
  p.update(sample(6));  // the interval passed since step 5 was drawn
  EXPECT_EQ(count(out.str(), "\rstep "), 6u);
  for (std::int64_t step = 7; step <= 9; ++step) p.update(sample(step));  // no time passes
  EXPECT_EQ(count(out.str(), "\rstep "), 6u);
  EXPECT_EQ(out.str().find("step  9/10"), std::string::npos);
  p.update(sample(10));  // the last step, drawn at once
  EXPECT_EQ(count(out.str(), "\rstep "), 7u);
  EXPECT_NE(out.str().find("\rstep 10/10 [####################] 100% "), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("elapsed 1s" + kEsc), std::string::npos);  // done: elapsed, not ETA
  p.finish();
  EXPECT_EQ(count(out.str(), "\rstep "), 7u);  // nothing left undrawn
}

TEST(ProgressBar, MessageClearsTheBarPrintsOnItsOwnLineAndRedraws) {
  FakeClock clock;
  std::ostringstream out;
  Progress p(out, ProgressMode::Bar, 100, 0, 10, clock.fn());
  p.message("before any step");
  EXPECT_EQ(out.str(), "before any step\n");
  out.str("");
  p.update(sample(10, 5.0));
  const std::string drawn = out.str();
  ASSERT_EQ(drawn.front(), '\r');
  p.message("eval loss 2.0000");
  EXPECT_EQ(out.str(), drawn + "\r" + kEsc + "eval loss 2.0000\n" + drawn);
  p.finish();
  out.str("");
  p.message("after the end");
  EXPECT_EQ(out.str(), "after the end\n");
}

TEST(ProgressQuiet, UpdatesWriteNothingButMessagesPrint) {
  std::ostringstream out;
  Progress p(out, ProgressMode::Quiet, 100, 0, 1);
  for (std::int64_t step = 1; step <= 100; ++step) p.update(sample(step));
  p.finish();
  EXPECT_EQ(out.str(), "");
  p.message("warning: something");
  EXPECT_EQ(out.str(), "warning: something\n");
}

TEST(ProgressEta, CountsOnlyStepsAndTimeOfThisProcessAfterResume) {
  for (const ProgressMode mode : {ProgressMode::Lines, ProgressMode::Bar}) {
    FakeClock clock;
    std::ostringstream out;
    Progress p(out, mode, 1000, 500, 100, clock.fn());
    // 100 steps done in 10 s since the resume at step 500: 400 steps left at 10 steps/s. The
    // sample's elapsed_s (here 123 s, counting the run before the resume) is only displayed.
    clock.t += 10.0;
    p.update(sample(600, 123.0));
    const std::string head = mode == ProgressMode::Bar ? "\rstep  600/1000 [" : "step 600/1000 loss";
    EXPECT_EQ(out.str().rfind(head, 0), 0u) << out.str();
    EXPECT_NE(out.str().find(" ETA 40s"), std::string::npos) << out.str();
  }
  FakeClock clock;
  std::ostringstream out;
  Progress p(out, ProgressMode::Lines, 1000, 500, 100, clock.fn());
  clock.t += 10.0;
  p.update(sample(600, 123.0));
  EXPECT_EQ(out.str(), "step 600/1000 loss 1.2340 lr 7.00e-04 12345 tok/s elapsed 2m03s ETA 40s\n");
}

TEST(ProgressEta, IsUnknownUntilItCanBeEstimated) {
  FakeClock clock;
  {
    std::ostringstream out;
    Progress p(out, ProgressMode::Lines, 1000, 500, 100, clock.fn());
    clock.t += 3.0;
    p.update(sample(500, 3.0));  // no step done yet
    p.finish();
    EXPECT_NE(out.str().find("step 500/1000 "), std::string::npos) << out.str();
    EXPECT_NE(out.str().find(" ETA ?\n"), std::string::npos) << out.str();
  }
  {
    std::ostringstream out;
    Progress p(out, ProgressMode::Bar, 1000, 500, 100, clock.fn());
    p.update(sample(501, 3.0));  // no time passed yet
    EXPECT_NE(out.str().find(" ETA ?" + kEsc), std::string::npos) << out.str();
  }
}

TEST(ProgressFormat, NonFiniteValuesPrintAsNanAndInf) {
  std::ostringstream out;
  Progress p(out, ProgressMode::Lines, 10, 0, 1);
  std::ostringstream bar_out;
  Progress bar(bar_out, ProgressMode::Bar, 10, 0, 1);
  const double inf = std::numeric_limits<double>::infinity();
  ProgressSample s = sample(1);
  s.loss = std::nan("");
  s.tokens_per_s = inf;
  p.update(s);
  s.step = 2;
  s.loss = inf;
  s.tokens_per_s = std::nan("");
  p.update(s);
  s.step = 3;
  s.loss = -inf;
  p.update(s);
  const auto lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[0].find("loss nan lr"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find(" inf tok/s"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("loss inf lr"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find(" nan tok/s"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("loss -inf lr"), std::string::npos) << lines[2];
  s.loss = std::nan("");
  bar.update(s);
  EXPECT_NE(bar_out.str().find("loss nan lr"), std::string::npos) << bar_out.str();
  EXPECT_NE(bar_out.str().find(" nan tok/s"), std::string::npos) << bar_out.str();
}

TEST(ProgressFormat, BarThroughputIsCompact) {
  auto with_rate = [](double r) {
    std::ostringstream out;
    Progress p(out, ProgressMode::Bar, 10, 0, 1);
    ProgressSample s = sample(1);
    s.tokens_per_s = r;
    p.update(s);
    return out.str();
  };
  EXPECT_NE(with_rate(987.0).find(" 987 tok/s"), std::string::npos);
  EXPECT_NE(with_rate(999.7).find(" 1.0k tok/s"), std::string::npos);
  EXPECT_NE(with_rate(12345.0).find(" 12.3k tok/s"), std::string::npos);
  EXPECT_NE(with_rate(4.5e6).find(" 4.5M tok/s"), std::string::npos);
}

TEST(ProgressFormatDuration, SecondsMinutesHours) {
  EXPECT_EQ(format_duration(0.0), "0s");
  EXPECT_EQ(format_duration(42.0), "42s");
  EXPECT_EQ(format_duration(42.4), "42s");
  EXPECT_EQ(format_duration(59.4), "59s");
  EXPECT_EQ(format_duration(59.6), "1m00s");  // rounds before splitting
  EXPECT_EQ(format_duration(185.0), "3m05s");
  EXPECT_EQ(format_duration(3599.0), "59m59s");
  EXPECT_EQ(format_duration(3720.0), "1h02m");
  EXPECT_EQ(format_duration(90000.0), "25h00m");
  EXPECT_EQ(format_duration(-5.0), "0s");
  EXPECT_EQ(format_duration(std::nan("")), "?");
  EXPECT_EQ(format_duration(std::numeric_limits<double>::infinity()), "?");
  const std::string huge = format_duration(1e300);  // clamped, no overflow
  EXPECT_EQ(huge.back(), 'm');
  EXPECT_NE(huge.find('h'), std::string::npos);
}

TEST(ProgressModeDetection, ChooseBarOnlyOnAQuietTerminal) {
  EXPECT_EQ(choose_progress_mode(true, nullptr, "xterm-256color"), ProgressMode::Bar);
  EXPECT_EQ(choose_progress_mode(true, "", "xterm"), ProgressMode::Bar);       // CI empty = unset
  EXPECT_EQ(choose_progress_mode(true, nullptr, nullptr), ProgressMode::Bar);  // TERM unset is not dumb
  EXPECT_EQ(choose_progress_mode(true, "1", "xterm"), ProgressMode::Lines);
  EXPECT_EQ(choose_progress_mode(true, "true", nullptr), ProgressMode::Lines);
  EXPECT_EQ(choose_progress_mode(true, nullptr, "dumb"), ProgressMode::Lines);
  EXPECT_EQ(choose_progress_mode(false, nullptr, "xterm"), ProgressMode::Lines);
  EXPECT_EQ(choose_progress_mode(false, "1", "dumb"), ProgressMode::Lines);
}

TEST(ProgressModeDetection, DetectGivesLinesForAPipeWhateverTheEnvironment) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  {
    ScopedEnv ci("CI", nullptr);
    ScopedEnv term("TERM", "xterm");
    EXPECT_EQ(detect_progress_mode(fds[1]), ProgressMode::Lines);
  }
  {
    ScopedEnv ci("CI", "1");
    EXPECT_EQ(detect_progress_mode(fds[1]), ProgressMode::Lines);
  }
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_EQ(detect_progress_mode(-1), ProgressMode::Lines);  // not even a file
}

TEST(ProgressModeDetection, DetectRespectsCiAndTermOnATerminal) {
  const int fd = ::isatty(STDOUT_FILENO) ? STDOUT_FILENO : ::isatty(STDERR_FILENO) ? STDERR_FILENO : -1;
  if (fd < 0) GTEST_SKIP() << "no terminal on stdout or stderr";
  ScopedEnv term("TERM", "xterm");
  {
    ScopedEnv ci("CI", nullptr);
    EXPECT_EQ(detect_progress_mode(fd), ProgressMode::Bar);
  }
  {
    ScopedEnv ci("CI", "1");
    EXPECT_EQ(detect_progress_mode(fd), ProgressMode::Lines);
  }
}

TEST(ProgressConstruction, RejectsAStartPastTheEndAndANonPositiveInterval) {
  std::ostringstream out;
  EXPECT_THROW(Progress(out, ProgressMode::Lines, 100, 0, 0), Error);
  EXPECT_THROW(Progress(out, ProgressMode::Lines, 100, 101, 10), Error);
  EXPECT_THROW(Progress(out, ProgressMode::Lines, 100, -1, 10), Error);
  EXPECT_NO_THROW(Progress(out, ProgressMode::Lines, 100, 100, 10));  // resumed at the end: nothing to do
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace ablate::train
