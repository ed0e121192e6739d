// Op cases (op_cases.hpp) of the index and layout ops: compare (every comparison, b of a's shape,
// repeated over a's rows, or one element; ties included) and permute (every rank, several orders).
#include <vector>

#include "backends/op_cases_catalogue.hpp"

namespace ablate::testing::catalogue {

namespace {
// Values from {-1, -0.5, 0, 0.5, 1} (exact in bf16) so that a and b tie often.
TensorSpec ladder(std::string name, Shape shape, int stride) {
  TensorSpec s = value(std::move(name), shape);
  for (std::int64_t i = 0; i < shape.numel(); ++i) s.fixed.push_back(0.5 * static_cast<double>((i * stride) % 5 - 2));
  return s;
}
}  // namespace

void add_index(std::vector<OpCase>& out) {
  const Shape a{3, 7};
  for (const Compare cmp : {Compare::eq, Compare::ne, Compare::lt, Compare::le, Compare::gt, Compare::ge})
    for (const Shape& b : {a, Shape{7}, Shape{1}}) {
      OpCase c;
      c.op = "compare";
      c.name = cat(compare_name(cmp), "_a", dims(a), "_b", dims(b));
      c.needs = {OptionalOp::compare};
      c.inputs = {ladder("a", a, 7), ladder("b", b, 3)};
      c.outputs = {value("y", a)};
      c.forward = [cmp](OpRun& r) { r.backend.compare_forward(r["y"], r["a"], r["b"], cmp); };
      out.push_back(std::move(c));
    }
  struct P {
    Shape x;
    std::vector<int> axes;
  };
  const std::vector<P> ps = {{Shape{5}, {0}},
                             {Shape{4, 6}, {1, 0}},
                             {Shape{2, 3, 4}, {2, 0, 1}},
                             {Shape{2, 3, 4, 5}, {0, 2, 1, 3}},  // [B, T, H, Dh] -> [B, H, T, Dh]
                             {Shape{2, 3, 4, 5}, {3, 1, 0, 2}},
                             {Shape{3, 40, 4, 33}, {0, 2, 1, 3}}};  // above onednn's threading grain
  for (const P& p : ps) {
    Permutation perm;
    perm.rank = static_cast<int>(p.axes.size());
    std::vector<std::int64_t> ydims;
    std::string order;
    for (int i = 0; i < perm.rank; ++i) {
      perm.axes[i] = p.axes[static_cast<std::size_t>(i)];
      ydims.push_back(p.x[perm.axes[i]]);
      order += num(perm.axes[i]);
    }
    OpCase c;
    c.op = "permute";
    c.name = cat("x", dims(p.x), "_axes", order);
    c.needs = {OptionalOp::permute};
    c.inputs = {value("x", p.x)};
    c.outputs = {value("y", Shape(ydims))};
    c.grad_inputs = {"x"};
    c.grad_outputs = {"y"};
    c.forward = [perm](OpRun& r) { r.backend.permute_forward(r["y"], r["x"], perm); };
    c.backward = [perm](OpRun& r) { r.backend.permute_backward(r["dx"], r["dy"], perm); };
    c.finite_differences = p.x.numel() <= 200;
    out.push_back(std::move(c));
  }
}

}  // namespace ablate::testing::catalogue
