// GPU timeline tracer: a CUDA injection library (CUDA_INJECTION64_PATH) that records, through
// CUPTI's activity API, every kernel, copy and fill on the GPU and every CUDA runtime/driver call
// on the host, and writes them as one TSV when the process exits. A tool for the GPU machine, which
// has no Nsight Systems: bench/gpu_timeline/analyse.py turns the TSV into "where a step's time goes"
// (GPU busy and idle per step, launches per step, how far the host runs ahead of the GPU).
//
//   CUDA_INJECTION64_PATH=$PWD/build/lib/libablate_gpu_timeline.so ABLATE_GPU_TIMELINE=OUT/c.tsv
//     build/bin/ablate run bench/configs/C_gpu_large.yaml --set train.steps=40
// (scripts/gpu_session.sh check OUT timeline does this for configs B-gpu and C-gpu.)
//
// Rows (times in ns, CUPTI's clock, the same on host and device; corr links a launch to its work):
//   K  start end corr stream name      a kernel
//   C  start end corr stream bytes     a copy         S  start end corr stream bytes   a fill
//   R  start end corr thread call      a runtime call D  start end corr thread call    a driver call
#include <cupti.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace {

constexpr size_t kBufferBytes = 8u << 20;

std::mutex g_mutex;
std::vector<std::string> g_rows;  // formatted rows, written at exit
bool g_written = false;

void warn(const char* what, CUptiResult r) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  std::fprintf(stderr, "gpu_timeline: %s failed: %s\n", what, text ? text : "?");
}

std::string api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS && name) return name;
  return "cbid" + std::to_string(cbid);
}

// A copy (C) or a fill (S): the bytes it moved.
template <class Record>
void transfer_row(char kind, const Record& r) {
  char line[128];
  std::snprintf(line, sizeof line, "%c\t%llu\t%llu\t%u\t%u\t%llu", kind, (unsigned long long)r.start, (unsigned long long)r.end,
                r.correlationId, r.streamId, (unsigned long long)r.bytes);
  g_rows.emplace_back(line);
}

void add_row(const CUpti_Activity* record) {
  char line[512];
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      std::snprintf(line, sizeof line, "K\t%llu\t%llu\t%u\t%u\t", (unsigned long long)k->start, (unsigned long long)k->end,
                    k->correlationId, k->streamId);
      g_rows.push_back(std::string(line) + (k->name ? k->name : "?"));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: transfer_row('C', *reinterpret_cast<const CUpti_ActivityMemcpy6*>(record)); break;
    case CUPTI_ACTIVITY_KIND_MEMSET: transfer_row('S', *reinterpret_cast<const CUpti_ActivityMemset4*>(record)); break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      const bool runtime = record->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      std::snprintf(line, sizeof line, "%c\t%llu\t%llu\t%u\t%u\t", runtime ? 'R' : 'D', (unsigned long long)a->start,
                    (unsigned long long)a->end, a->correlationId, a->threadId);
      g_rows.push_back(std::string(line) + api_name(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, a->cbid));
      break;
    }
    default: break;
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) add_row(record);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped)
      std::fprintf(stderr, "gpu_timeline: %zu records dropped\n", dropped);
  }
  std::free(buffer);
}

void write_rows() {
  cuptiActivityFlushAll(1);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_written) return;
  g_written = true;
  const char* path = std::getenv("ABLATE_GPU_TIMELINE");
  if (!path) path = "gpu_timeline.tsv";
  FILE* out = std::fopen(path, "w");
  if (!out) {
    std::fprintf(stderr, "gpu_timeline: cannot write %s\n", path);
    return;
  }
  for (const auto& row : g_rows) std::fprintf(out, "%s\n", row.c_str());
  std::fclose(out);
  std::fprintf(stderr, "gpu_timeline: %zu records in %s\n", g_rows.size(), path);
}

}  // namespace

// Called by the CUDA driver when it initialises, because CUDA_INJECTION64_PATH names this library.
extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    warn("cuptiActivityRegisterCallbacks", r);
    return 0;
  }
  for (CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                  CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER})
    if ((r = cuptiActivityEnable(kind)) != CUPTI_SUCCESS) warn("cuptiActivityEnable", r);
  std::atexit(write_rows);
  return 1;
}
