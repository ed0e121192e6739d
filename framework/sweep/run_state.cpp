// read_run_phase (run_state.hpp).
#include "sweep/run_state.hpp"

#include "results/run_file.hpp"

namespace ablate::sweep {

const char* to_string(RunPhase phase) {
  switch (phase) {
    case RunPhase::Pending: return "pending";
    case RunPhase::Running: return "running";
    case RunPhase::Completed: return "done";
    case RunPhase::Diverged: return "diverged";
    case RunPhase::Failed: return "failed";
    case RunPhase::Interrupted: return "interrupted";
  }
  return "?";
}

RunPhaseInfo read_run_phase(const std::filesystem::path& run_dir) {
  const std::filesystem::path file = run_dir / "run.h5";
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return {};
  RunPhaseInfo info;
  try {
    const results::RunReader reader(file);
    const results::RunState state = reader.state();
    info.step = state.step;
    info.reason = state.reason;
    switch (state.status) {
      case results::RunStatus::Completed: info.phase = RunPhase::Completed; break;
      case results::RunStatus::Diverged: info.phase = RunPhase::Diverged; break;
      case results::RunStatus::Failed: info.phase = RunPhase::Failed; break;
      case results::RunStatus::Interrupted: info.phase = RunPhase::Interrupted; break;
      case results::RunStatus::Running:
        if (reader.writer_alive()) {
          info.phase = RunPhase::Running;
        } else {
          info.phase = RunPhase::Interrupted;
          info.writer_died = true;
          info.reason = "its process ended without recording how (killed?); resumes from its last checkpoint";
        }
        break;
    }
  } catch (const std::exception& e) {
    info.phase = RunPhase::Failed;
    info.reason = std::string("unreadable run file: ") + e.what();
  }
  return info;
}

bool reached(const RunPhaseInfo& p, std::int64_t stop_at) {
  return p.phase == RunPhase::Completed || p.phase == RunPhase::Diverged ||
         (stop_at > 0 && p.phase == RunPhase::Interrupted && p.step >= stop_at);
}

}  // namespace ablate::sweep
