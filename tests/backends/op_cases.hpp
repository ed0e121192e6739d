// The backend op-case harness: for every op of ablate::Backend, a catalogue of small cases
// (odd sizes, every mask kind, dropout on/off, ignore_index, label smoothing, both dtypes) that
// any backend can run, returning every output and gradient as host floats for comparison.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ablate/backend.hpp"

namespace ablate::testing {

// What dtype a case tensor gets in a run of dtype `dtype` (F32 or BF16).
enum class Role : std::uint8_t {
  Value,  // the run's dtype; its gradient too
  Param,  // the run's dtype; its gradient is F32 (mixed precision keeps f32 parameter gradients)
  F32,    // always F32 (statistics, loss, optimizer state)
  BF16,   // always BF16 (adam's low-precision weight copy)
  I32,    // ids, targets, lengths
};

struct TensorSpec {
  std::string name;
  Shape shape;
  Role role = Role::Value;
  // Generated inputs: uniform in [lo, hi], or with |x| >= min_abs (away from a ReLU kink), or
  // `fixed` verbatim (ints for I32). Ignored for outputs.
  double lo = -1.0, hi = 1.0, min_abs = 0.0;
  std::vector<double> fixed;
};

// The tensors of one run, by name: inputs, outputs, and gradients "d<name>".
struct OpRun {
  Backend& backend;
  DType dtype;
  std::map<std::string, Tensor> tensors;
  Tensor& operator[](const std::string& name);  // throws ablate::Error naming a missing tensor
  Tensor* opt(const std::string& name);         // null when absent
  float scalar(const std::string& name);        // element 0 of an F32 tensor, read back
};

struct OpCase {
  std::string op;                         // the op family: "linear", "attention", ...
  std::string name;                       // unique within op; [A-Za-z0-9_]
  bool bf16 = true;                       // also runs with BF16 values
  std::vector<OptionalOp> needs;          // optional ops a backend must support to run the case
  double reduction = 1;                   // the longest reduction length in the op (scales parity tolerances)
  std::vector<TensorSpec> inputs;         // generated from the case's seed and uploaded
  std::vector<TensorSpec> outputs;        // allocated (empty) before forward
  std::vector<std::string> grad_inputs;   // inputs that get gradients "d<name>", pre-filled (checks +=)
  std::vector<std::string> written;       // of those, the ones backward stores as GradStore::Write: pre-filled
                                          // with NaN (a read of the old contents shows), holding the gradient alone
  std::vector<std::string> grad_outputs;  // outputs that get random upstream gradients "d<name>"
  std::vector<std::string> inplace;       // inputs the forward updates, reported as results
  std::function<void(OpRun&)> forward;
  std::function<void(OpRun&)> backward;  // empty: the op has no backward
  // false: an F32 output too coarse for central differences (a mean over hundreds of rows:
  // its rounding noise exceeds the tiny gradients), or a case too large for two runs per
  // input element; the case is covered by parity only.
  bool finite_differences = true;
  std::string id() const { return op + "_" + name; }
};

using HostMap = std::map<std::string, std::vector<float>>;

// Every result of a run, as floats: the outputs, the in-place inputs, and the gradients
// "d<input>" (pre-fill included: they hold pre-fill + gradient after backward; a written one, the
// gradient alone).
struct OpResult {
  HostMap values;
};

std::vector<OpCase> all_op_cases();
// all_op_cases(), built once per process; and the indices of those with a backward that
// finite differences can check.
const std::vector<OpCase>& shared_op_cases();
std::vector<int> gradcheck_case_indices();

// The deterministic host data of a case: generated inputs (rounded to bf16 for a BF16 run where
// the role makes them bf16), the gradient pre-fill per grad input, and the upstream gradient per
// grad output.
HostMap case_inputs(const OpCase& c, DType dtype);
HostMap case_grad_prefill(const OpCase& c, DType dtype);  // NaN for the written ones
// How the case's backward stores the gradient of `input`: Write when it is in c.written.
GradStore grad_store(const OpCase& c, const std::string& input);
HostMap case_upstream(const OpCase& c, DType dtype);

// A wrong argument (tests of the op contract, backend_contract_test.cpp): the tensor `name` (an
// input, an output, or a gradient "d<name>" of backward) gets `shape` instead of the case's, zeros.
struct Mistake {
  std::string name;
  Shape shape;
};

// The first optional op case `c` needs that `backend` lacks (its supports() says no), named; ""
// when the backend can run the case.
std::string missing_optional_op(const Backend& backend, const OpCase& c);

// Runs a case on `backend`: uploads the inputs (with `overrides` replacing some by name), runs
// forward and, when `backward` and the case has one, backward. Returns every result.
OpResult run_case(Backend& backend, const OpCase& c, DType dtype, const HostMap* overrides = nullptr, bool backward = true,
                  const Mistake* mistake = nullptr);

// Parity of two runs of the same case: |a - b| <= atol * scale + rtol * |b| per element, with
// scale = max(1, max |b|) * sqrt(reduction) for F32, max(1, max |b|) for BF16. NaN/inf must match.
struct Tolerance {
  double rtol, atol;
};
Tolerance parity_tolerance(const OpCase& c, DType dtype);
struct CompareResult {
  bool ok = true;
  std::string report;  // the worst elements of each failing tensor
};
CompareResult compare_results(const OpCase& c, DType dtype, const OpResult& expected, const OpResult& actual);

}  // namespace ablate::testing
