// The cuDNN graphs of backend/cudnn without a GPU: cuDNN's ahead-of-time planning against a
// described H100 (data/h100_device.json, cuDNN's device-property JSON) takes every graph the
// backend builds, for every mask, dropout and determinism variant the backend uses, through
// cuDNN's own validation, its heuristics and an engine's support checks, up to loading the
// engine's kernels onto a device (which the CUDA driver stub refuses). A graph cuDNN does not
// recognise as fused attention or layer norm gets no engine and fails here.
//
// This test links the graph sources themselves (ABLATE_CUDNN_GRAPH_SOURCES in
// plugins/backend_cudnn/CMakeLists.txt; not the runtime library, whose symbols are hidden) and no
// CUDA runtime: the few runtime calls the graph builder makes for its I32 constants are served
// from host memory below. Nothing is executed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>

#include <cuda_runtime.h>

#include "cudnn_graph.hpp"

extern "C" {
cudaError_t cudaMalloc(void** p, size_t n) {
  *p = std::malloc(n);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind, cudaStream_t) {
  std::memcpy(d, s, n);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* d, int v, size_t n, cudaStream_t) {
  std::memset(d, v, n);
  return cudaSuccess;
}
const char* cudaGetErrorName(cudaError_t) { return "cudaError (host stand-in)"; }
const char* cudaGetErrorString(cudaError_t) { return "host stand-in of the CUDA runtime"; }
}

namespace backend_cudnn {
namespace {

std::string h100() {
  std::ifstream f(ABLATE_CUDNN_TEST_DATA "/h100_device.json");
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Shape {
  std::int64_t B, H, T, S, Dh;
};

// config B's attention (T = S = 128, 8 heads of 64) and config C's (T = S = 1024, 16 heads of 64),
// and an odd one (T != S, Dh 32). One test per shape: nearly all of the time is cuDNN compiling
// its kernels (NVRTC), so the shapes run in parallel under ctest, and the sanitizer build, which
// checks Ablate's code rather than cuDNN's, plans the odd shape only (tests/plugins/backend_cudnn).
struct NamedShape {
  const char* name;
  Shape shape;
};
void PrintTo(const NamedShape& s, std::ostream* os) { *os << s.name; }  // test names, not bytes
constexpr NamedShape kShapes[] = {
    {"ConfigB", {16, 8, 128, 128, 64}}, {"ConfigC", {8, 16, 1024, 1024, 64}}, {"Odd", {3, 2, 37, 53, 32}}};

class AttentionGraphs : public ::testing::TestWithParam<NamedShape> {};

TEST_P(AttentionGraphs, EveryVariantHasAnEngineOnAnH100) {
  const std::string device = h100();
  ASSERT_FALSE(device.empty()) << "missing " ABLATE_CUDNN_TEST_DATA "/h100_device.json";
  const Shape& s = GetParam().shape;
  for (int flags = 0; flags < 8; ++flags) {
    const SdpaConfig c{s.B, s.H, s.T, s.S, s.Dh, 0.125f, (flags & 1) != 0, (flags & 2) != 0, (flags & 4) != 0};
    if (c.causal && c.T != c.S) continue;  // the backend's causal attention is self-attention
    const std::string what = "T " + std::to_string(s.T) + " S " + std::to_string(s.S) + " Dh " + std::to_string(s.Dh) +
                             (c.causal ? " causal" : "") + (c.key_padding ? " padding" : "") + (c.dropout ? " dropout" : "");
    EXPECT_TRUE(engine_for_device(GraphKind::SdpaForward, c, true, true, device)) << "forward, " << what;
    for (const bool deterministic : {true, false})
      EXPECT_TRUE(engine_for_device(GraphKind::SdpaBackward, c, true, deterministic, device))
          << "backward, " << what << (deterministic ? ", deterministic" : "");
  }
}

INSTANTIATE_TEST_SUITE_P(CudnnGraphs, AttentionGraphs, ::testing::ValuesIn(kShapes),
                         [](const ::testing::TestParamInfo<NamedShape>& info) { return std::string(info.param.name); });

TEST(CudnnGraphs, LayerNormHasAnEngineWhereTheBackendUsesIt) {
  const std::string device = h100();
  SdpaConfig rows_by_width;  // layer norm reads rows from T and the width from Dh
  rows_by_width.T = 2048;
  rows_by_width.Dh = 512;
  EXPECT_TRUE(engine_for_device(GraphKind::LayerNormForward, rows_by_width, false, true, device)) << "f32 forward";
  EXPECT_TRUE(engine_for_device(GraphKind::LayerNormForward, rows_by_width, true, true, device)) << "bf16 forward";
  EXPECT_TRUE(engine_for_device(GraphKind::LayerNormBackward, rows_by_width, false, true, device)) << "f32 backward";
}

TEST(CudnnGraphs, TheCheckRefusesWhatCudnnRefuses) {
  // The negative control, showing the check can fail: cuDNN 9.19's engines refuse a bf16 layer
  // norm backward with f32 dgamma/dbeta (they want gamma's dtype; Ablate keeps parameter
  // gradients in f32), so the backend runs its own kernel there. Should a later cuDNN accept
  // it, this expectation is the one to update (and the fallback becomes unnecessary).
  const std::string device = h100();
  SdpaConfig rows_by_width;
  rows_by_width.T = 2048;
  rows_by_width.Dh = 512;
  EXPECT_FALSE(engine_for_device(GraphKind::LayerNormBackward, rows_by_width, true, true, device));
  SdpaConfig empty;  // and a shape with no elements is refused before cuDNN is asked, as in the backend
  EXPECT_FALSE(engine_for_device(GraphKind::SdpaForward, empty, true, true, device));
}

}  // namespace
}  // namespace backend_cudnn
