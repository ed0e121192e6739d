// Internal header of backend/cudnn: CUDA, cuBLASLt and cuDNN status codes turned into
// ablate::Error, naming what was being done.
#pragma once

#include <string>

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "ablate/error.hpp"

namespace backend_cudnn {

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw ablate::Error(std::string("backend/cudnn: ") + what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}
// The name of a cuBLAS(Lt) status (cublasGetStatusName lives in libcublas, which is not linked).
inline const char* cublas_status_name(cublasStatus_t st) {
  switch (st) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "unknown cuBLAS status";
  }
}
inline void check_cublas(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw ablate::Error(std::string("backend/cudnn: ") + what + ": cuBLASLt returned " + cublas_status_name(st) + " (" +
                        std::to_string(static_cast<int>(st)) + ")");
}
inline void check_cudnn(cudnnStatus_t st, const char* what) {
  if (st != CUDNN_STATUS_SUCCESS) throw ablate::Error(std::string("backend/cudnn: ") + what + ": " + cudnnGetErrorString(st));
}

}  // namespace backend_cudnn
