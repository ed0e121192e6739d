// The `ablate` command-line interface as a function, so tests drive it in-process with string
// streams and main() is a one-liner. Each command lives in its own cmd_<name>.cpp.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <signal.h>

#include <boost/program_options.hpp>

#include "analysis/report_files.hpp"
#include "train/progress.hpp"

namespace ablate::spec {
struct ExperimentSpec;
}

namespace ablate::cli {

// Runs `ablate args...` (args excludes the program name); returns the exit code (exit_codes.hpp).
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

struct Command {
  const char* name;
  const char* summary;
  // Receives the arguments after the command name. Throws ablate errors; run() maps them to exit codes.
  std::function<int(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)> main;
};

// Every command that works; only these are listed by `ablate --help`.
const std::vector<Command>& commands();

// A command's positional argument: the option that takes it, and how many (-1: any number).
struct Positional {
  const char* name = nullptr;  // none
  int count = 0;
};

// Parses a command's arguments against `options` (which declare --help) into `vm`; boost's parse
// errors become UsageErrors that name the command. False when --help was given: the options were
// printed on `out`, and the command returns kExitOk.
bool parse_command(const char* command, const boost::program_options::options_description& options,
                   const std::vector<std::string>& args, Positional positional, boost::program_options::variables_map& vm,
                   std::ostream& out);

// The values of a repeatable string option (`--set`, `--plugin-path`), empty if it was not given.
std::vector<std::string> repeated(const boost::program_options::variables_map& vm, const char* key);

// The lines of the file named by --input, else of stdin (CRLF read as LF): `ablate generate`'s
// prompts and `ablate translate`'s sentences. Throws UsageError when the file cannot be read.
std::vector<std::string> input_lines(const boost::program_options::variables_map& vm, const char* command);

// The curves' x axis option (`--x step|tokens|flops|time`) of `ablate plot` and `ablate compare`:
// declared once here, read back as the figures' CurveAxis (UsageError naming the command).
void add_curve_axis_option(boost::program_options::options_description& options);
analysis::CurveAxis curve_axis(const boost::program_options::variables_map& vm, const char* command);

// --progress NAME (auto | bar | lines | quiet) as a mode; auto looks at stdout.
train::ProgressMode progress_mode(const char* command, const std::string& name);

// Installs `handler` for SIGINT and SIGTERM while alive, then restores the previous handlers
// (the stop request of `ablate run` and `ablate sweep`).
class StopSignals {
 public:
  explicit StopSignals(void (*handler)(int));
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {
  }, old_term_{};
};

// "ablate 0.1.0 (git <rev>, plugin API <kPluginApiVersion>, ABI <tag>)"
std::string version_line();

int cmd_compare(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cmd_eval(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cmd_export(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cmd_generate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cmd_plot(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Prints an analysis (analysis/report_files.hpp) as `ablate compare` and `ablate sweep` do: the
// tables as text or LaTeX, each file written, and the notes on `err` prefixed by `command`.
void print_analysis(const analysis::Analysis& analysis, const std::string& format, const char* command, std::ostream& out,
                    std::ostream& err);
int cmd_plugins(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cmd_inspect(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cmd_keys(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cmd_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cmd_sweep(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cmd_tokenize(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cmd_translate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cmd_validate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// The default baseline of a sweep's comparison: the spec's own base configuration as the arm
// `ablate compare` names it ("model.block=post_norm,model.heads=8"), over every key the grid and
// the explicit runs vary (that the base has), when the grid holds it or there is no grid (the base
// is then a point beside the runs); "" otherwise (compare then takes its first arm).
std::string base_arm(const spec::ExperimentSpec& base);

}  // namespace ablate::cli
