// Tests of the run file across processes: an h5py reader in SWMR mode follows rows and status
// appended after it opened; a writer killed with SIGKILL at any moment leaves a file that
// RunReader and h5py open with every flushed row, and that resumes; the documented h5py example
// (docs/examples/read_run.py) runs on a file written here.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "framework/plugin_host/plugin_test_util.hpp"
#include "framework/results/run_file_test_util.hpp"
#include "results/run_file.hpp"

namespace ablate::results {
namespace {
namespace fs = std::filesystem;
using ablate::testing::TempDir;
using namespace ablate::results::testing;

const std::string kScripts = ABLATE_RESULTS_TEST_DIR;
const std::string kExamples = ABLATE_DOCS_EXAMPLES_DIR;

// /usr/bin/python3 running `script` with stdin and stdout (+stderr) on pipes.
class PythonChild {
 public:
  PythonChild(const std::string& script, const std::string& arg) {
    int to[2], from[2];
    if (::pipe(to) != 0 || ::pipe(from) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(to[0], 0);
      ::dup2(from[1], 1);
      ::dup2(from[1], 2);
      for (int fd : {to[0], to[1], from[0], from[1]}) ::close(fd);
      ::execl(kPython, kPython, script.c_str(), arg.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(to[0]);
    ::close(from[1]);
    in_ = to[1];
    out_ = from[0];
  }
  ~PythonChild() {
    if (in_ >= 0) ::close(in_);
    if (out_ >= 0) ::close(out_);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  // The next line of output ("" after 60 s or at the end).
  std::string line() {
    std::string s;
    while (true) {
      const std::size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        s = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return s;
      }
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, 60000) <= 0) return "";
      char buf[4096];
      const ssize_t n = ::read(out_, buf, sizeof buf);
      if (n <= 0) return std::exchange(buffer_, "");
      buffer_.append(buf, static_cast<std::size_t>(n));
    }
  }
  void send(const std::string& text) { ASSERT_EQ(::write(in_, text.data(), text.size()), static_cast<ssize_t>(text.size())); }
  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1;
  std::string buffer_;
};

std::string numbers(const std::vector<std::int64_t>& steps) {
  std::string s;
  for (std::int64_t v : steps) {
    if (!s.empty()) s += ' ';
    s += std::to_string(v);
  }
  return s;
}

TEST(RunFileSwmr, H5pyReaderFollowsRowsAndStatusAppendedAfterItOpened) {
  ABLATE_REQUIRE_H5PY();
  TempDir dir;
  const fs::path file = dir.path() / "run.h5";
  const RunLayout l = sample_layout();
  RunWriter w = RunWriter::create(file, sample_info(), l);
  for (std::int64_t step : {10, 20, 30}) w.append_train(step, train_values(step));
  w.append_attention(30, attention_data(l, 30).log());
  w.flush();

  PythonChild py(kScripts + "/swmr_follow.py", file.string());
  EXPECT_EQ(py.line(), "opened 3 3 1 running");
  for (std::int64_t step : {40, 50, 60, 70}) w.append_train(step, train_values(step));
  w.append_attention(60, attention_data(l, 60).log());
  w.set_state({RunStatus::Completed, "reached the target loss", 70, "2025-01-31T15:00:00Z"});
  w.flush();
  py.send("go\n");
  EXPECT_EQ(py.line(), "refreshed 7 7 2");
  EXPECT_EQ(py.line(), "steps 10 20 30 40 50 60 70");
  const std::string got = py.line();
  // Python's repr is the shortest round-trip text; compare as numbers.
  std::vector<double> got_values;
  for (std::size_t at = got.find(' '); at != std::string::npos; at = got.find(' ', at + 1))
    got_values.push_back(std::stod(got.substr(at + 1)));
  ASSERT_EQ(got_values.size(), 7u) << got;
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(got_values[i], train_values(10 * static_cast<std::int64_t>(i + 1))[0]);
  EXPECT_EQ(py.line(), "status completed 70 reached the target loss");
  EXPECT_EQ(py.wait(), 0);
  w.close();
}

TEST(RunFileSwmr, H5pyReaderOfAFinishedRunSeesEvaluationsRecordedAfterItOpened) {
  ABLATE_REQUIRE_H5PY();
  TempDir dir;
  const fs::path file = dir.path() / "run.h5";
  {
    RunWriter w = RunWriter::create(file, sample_info(), sample_layout());
    for (std::int64_t step : {10, 20, 30}) w.append_train(step, train_values(step));
    w.set_state({RunStatus::Completed, "", 30, "2025-01-31T15:00:00Z"});
    w.close();
  }
  PythonChild py(kScripts + "/evals_follow.py", file.string());
  EXPECT_EQ(py.line(), "opened 3 0");
  // Two evaluations of one checkpoint: recorded while the reader stays open.
  RunWriter::record_evaluation(file, {"test", 30, R"({"metrics": {"bleu": 21.5}})", ""});
  RunWriter::record_evaluation(file, {"test_beam4", 30, R"({"metrics": {"bleu": 23.25}})", ""});
  py.send("go\n");
  EXPECT_EQ(py.line(), "refreshed 3 2");
  EXPECT_EQ(py.line(), "steps 10 20 30");
  EXPECT_EQ(py.line(), "eval test 30 21.5");
  EXPECT_EQ(py.line(), "eval test_beam4 30 23.25");
  EXPECT_EQ(py.wait(), 0);
}

// The child: creates the run file and appends forever, flushing each row and reporting its step.
[[noreturn]] void append_until_killed(const fs::path& file, int report_fd) {
  try {
    const RunLayout l = sample_layout();
    RunWriter w = RunWriter::create(file, sample_info(), l);
    for (std::int64_t step = 1;; ++step) {
      w.append_train(step, train_values(step));
      if (step % 3 == 0) {
        w.append_attention(step, attention_data(l, step).log());
        w.append_stats(step, stats_data(l, step).log());
      }
      if (step % 7 == 0) w.append_eval(step, eval_values(step));
      w.set_state({RunStatus::Running, "", step, ""});
      w.flush();
      if (::write(report_fd, &step, sizeof step) != sizeof step) ::_exit(4);
    }
  } catch (...) {
    ::_exit(3);
  }
}

TEST(RunFileSwmr, AWriterKilledAtAnyMomentLeavesAReadableResumableFile) {
  TempDir dir;
  const bool python = have_h5py();
  for (int trial = 0; trial < 6; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const fs::path file = dir.path() / ("run" + std::to_string(trial) + ".h5");
    int report[2];
    ASSERT_EQ(::pipe(report), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(report[0]);
      append_until_killed(file, report[1]);
    }
    ::close(report[1]);
    // Wait for some flushed rows, then kill at a different moment of an append each trial.
    std::int64_t flushed = 0, v = 0;
    while (flushed < 10 + 7 * trial) {
      ASSERT_EQ(::read(report[0], &v, sizeof v), static_cast<ssize_t>(sizeof v)) << "the writer died on its own";
      flushed = v;
    }
    ::usleep(static_cast<useconds_t>(trial * 397));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "writer exit status " << status;
    while (::read(report[0], &v, sizeof v) == static_cast<ssize_t>(sizeof v)) flushed = v;  // flushed before the kill landed
    ::close(report[0]);

    {
      const RunReader r(file);
      EXPECT_FALSE(r.writer_alive());
      const MetricTable t = r.metrics(MetricSplit::Train);
      ASSERT_GE(static_cast<std::int64_t>(t.steps.size()), flushed);
      for (std::size_t i = 0; i < t.steps.size(); ++i) {
        ASSERT_EQ(t.steps[i], static_cast<std::int64_t>(i + 1));
        for (std::size_t c = 0; c < t.names.size(); ++c)
          ASSERT_EQ(t.columns[c][i], train_values(t.steps[i])[c]) << t.names[c] << " @ " << t.steps[i];
      }
      const RunState s = r.state();
      EXPECT_EQ(s.status, RunStatus::Running);
      EXPECT_GE(s.step, flushed);
      const std::vector<std::int64_t> att = r.attention_steps();
      EXPECT_GE(static_cast<std::int64_t>(att.size()), flushed / 3) << numbers(att);
      for (std::size_t log = 0; log < att.size(); ++log) {
        const FloatTensor a = r.attention(0, log);
        EXPECT_EQ(a.values, attention_data(r.layout(), att[log]).slots[0]) << "log " << log << " step " << att[log];
      }
      EXPECT_GE(static_cast<std::int64_t>(r.stats_steps().size()), flushed / 3);
      EXPECT_GE(static_cast<std::int64_t>(r.metrics(MetricSplit::Eval).steps.size()), flushed / 7);
    }
    if (python) {
      std::string out;
      EXPECT_EQ(run_python(kScripts + "/read_killed.py", "'" + file.string() + "' " + std::to_string(flushed),
                           dir.path() / "py.txt", &out),
                0)
          << out;
    }

    // Resume from the last complete step: the stale open-for-write mark is cleared, rows continue.
    const std::int64_t last = RunReader(file).metrics(MetricSplit::Train).steps.back();
    RunWriter w = RunWriter::resume(file, last);
    w.append_train(last + 1, train_values(last + 1));
    w.set_state({RunStatus::Completed, "", last + 1, utc_now_iso8601()});
    w.close();
    EXPECT_EQ(RunReader(file).metrics(MetricSplit::Train).steps.back(), last + 1);
    if (python) {  // closed cleanly now: even a plain (non-SWMR) open works
      std::string out;
      EXPECT_EQ(run_python(kScripts + "/read_killed.py", "'" + file.string() + "' " + std::to_string(last + 1) + " --plain",
                           dir.path() / "py.txt", &out),
                0)
          << out;
    }
  }
}

TEST(RunFileSwmr, TheDocumentedH5pyExampleReadsARunFile) {
  ABLATE_REQUIRE_H5PY();
  TempDir dir;
  const fs::path file = dir.path() / "run.h5";
  const RunLayout l = sample_layout();
  {
    RunWriter w = RunWriter::create(file, sample_info(), l);
    for (std::int64_t step = 10; step <= 100; step += 10) {
      w.append_train(step, train_values(step));
      if (step % 50 == 0) {
        w.append_eval(step, eval_values(step));
        w.append_attention(step, attention_data(l, step).log());
        w.append_stats(step, stats_data(l, step).log());
        w.append_samples(step, samples_data(step));
      }
    }
    w.set_state({RunStatus::Completed, "", 100, "2025-01-31T15:00:00Z"});
    w.close();
  }
  std::string out;
  ASSERT_EQ(run_python(kExamples + "/read_run.py", "'" + file.string() + "'", dir.path() / "py.txt", &out), 0) << out;
  EXPECT_NE(out.find("run copy-pre_norm-s1-3f2a of norm_placement: status completed at step 100"), std::string::npos) << out;
  EXPECT_NE(out.find("train loss: 10 rows, steps 10..100"), std::string::npos) << out;
  EXPECT_NE(out.find("encoder/self/layer_0"), std::string::npos) << out;
  EXPECT_NE(out.find("every row sums to 1"), std::string::npos) << out;
}

}  // namespace
}  // namespace ablate::results
