// ABLATE_HD: marks a function of the SDK's shared math (philox.hpp, rope.hpp, activation_math.hpp,
// index_math.hpp) as callable from host C++ and, compiled by nvcc, from CUDA kernels: one formula
// for both.
#pragma once

#if defined(__CUDACC__)
#define ABLATE_HD __host__ __device__
#else
#define ABLATE_HD
#endif
