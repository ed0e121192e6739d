// Op cases (op_cases.hpp) of the row-wise and elementwise ops: layer norm, RMS norm, activations,
// add and mul (with repeated b), axpy, dropout, dropout_add (the fused residual add), embedding, head split/merge and the KV-cache write.
#include <cmath>
#include <vector>

#include "ablate/bf16.hpp"
#include "backends/op_cases_catalogue.hpp"

namespace ablate::testing::catalogue {

// ---- layer norm / RMS norm over the last dim: x[N, D]
// (D 256, 384, 1024: rows a backend may take in 16-byte packs, e.g. cudnn's warp-per-row kernels)
void add_norms(std::vector<OpCase>& out) {
  const std::vector<Shape> shapes = {Shape{1, 1},     Shape{3, 7},    Shape{7, 33},  Shape{2, 3, 65},
                                     Shape{300, 130}, Shape{40, 256}, Shape{5, 384}, Shape{17, 1024}};
  // dx written, not added (a new gradient buffer), at a small, a threaded and a wide shape
  const std::vector<Shape> written = {Shape{3, 7}, Shape{300, 130}, Shape{17, 1024}};
  std::vector<std::pair<Shape, bool>> runs;
  for (const Shape& s : shapes) runs.emplace_back(s, false);
  for (const Shape& s : written) runs.emplace_back(s, true);
  for (const auto& [s, write] : runs) {
    const std::int64_t D = s.last();
    {
      OpCase c;
      c.op = "layer_norm";
      c.name = cat("x", dims(s), write ? "_write" : "");
      c.reduction = static_cast<double>(D);
      c.inputs = {value("x", s, -2, 2), param("gamma", Shape{D}, 0.5, 1.5), param("beta", Shape{D})};
      c.outputs = {value("y", s), f32("mean", Shape{s.rows()}), f32("rstd", Shape{s.rows()})};
      c.grad_inputs = {"x", "gamma", "beta"};
      c.grad_outputs = {"y"};
      if (write) c.written = {"x"};
      const GradStore store = grad_store(c, "x");
      c.forward = [](OpRun& r) {
        r.backend.layer_norm_forward(r["y"], r["mean"], r["rstd"], r["x"], r["gamma"], r["beta"], 1e-5f);
      };
      c.backward = [store](OpRun& r) {
        r.backend.layer_norm_backward(r.opt("dx"), r.opt("dgamma"), r.opt("dbeta"), r["dy"], r["x"], r["mean"], r["rstd"],
                                      r["gamma"], store);
      };
      out.push_back(std::move(c));
    }
    {
      OpCase c;
      c.op = "rms_norm";
      c.name = cat("x", dims(s), write ? "_write" : "");
      c.reduction = static_cast<double>(D);
      c.inputs = {value("x", s, -2, 2), param("gamma", Shape{D}, 0.5, 1.5)};
      c.inputs[0].min_abs = 0.25;  // D = 1: y = x rstd is steep within sqrt(eps) of 0
      c.outputs = {value("y", s), f32("rstd", Shape{s.rows()})};
      c.grad_inputs = {"x", "gamma"};
      c.grad_outputs = {"y"};
      if (write) c.written = {"x"};
      const GradStore store = grad_store(c, "x");
      c.forward = [](OpRun& r) { r.backend.rms_norm_forward(r["y"], r["rstd"], r["x"], r["gamma"], 1e-5f); };
      c.backward = [store](OpRun& r) {
        r.backend.rms_norm_backward(r.opt("dx"), r.opt("dgamma"), r["dy"], r["x"], r["rstd"], r["gamma"], store);
      };
      out.push_back(std::move(c));
    }
  }
}

// ---- elementwise: activation, add, mul, axpy, dropout, dropout_add (any shape)
void add_elementwise(std::vector<OpCase>& out) {
  const Activation acts[] = {Activation::None, Activation::ReLU, Activation::GeluErf, Activation::GeluTanh, Activation::SiLU};
  // The last shape is above backend_onednn's 32K-element threading grain (multi-thread path).
  const std::vector<Shape> shapes = {Shape{1}, Shape{3, 33}, Shape{2, 3, 65}, Shape{4, 100, 90}};
  for (const Activation a : acts)
    for (const Shape& s : shapes) {
      OpCase c;
      c.op = "activation";
      c.name = std::string(act_tag(a)) + "_x" + dims(s);
      c.inputs = {value("x", s, -3, 3)};
      if (a == Activation::ReLU) c.inputs[0].min_abs = 0.05;
      c.outputs = {value("y", s)};
      c.grad_inputs = {"x"};
      c.grad_outputs = {"y"};
      c.forward = [a](OpRun& r) { r.backend.activation_forward(r["y"], r["x"], a); };
      c.backward = [a](OpRun& r) { r.backend.activation_backward(r["dx"], r["dy"], r["x"], a); };
      out.push_back(std::move(c));
    }
  struct Ad {
    Shape a, b;
    float alpha, beta;
  };
  const std::vector<Ad> adds = {{Shape{7}, Shape{7}, 1.0f, 1.0f},
                                {Shape{2, 3, 5}, Shape{2, 3, 5}, 0.5f, -2.0f},
                                {Shape{3, 7, 33}, Shape{7, 33}, 1.0f, 1.0f},
                                {Shape{5, 65}, Shape{65}, 2.0f, 0.25f},
                                {Shape{4, 100, 90}, Shape{100, 90}, 1.0f, -1.0f},
                                {Shape{2, 3, 5}, Shape{1}, 1.0f, 0.5f}};  // a scalar
  for (const Ad& d : adds) {
    OpCase c;
    c.op = "add";
    c.name = "a" + dims(d.a) + "_b" + dims(d.b) + (d.alpha != 1.0f || d.beta != 1.0f ? "_scaled" : "");
    c.reduction = static_cast<double>(d.a.numel() / d.b.numel());
    c.inputs = {value("a", d.a), param("b", d.b)};
    c.outputs = {value("y", d.a)};
    c.grad_inputs = {"a", "b"};
    c.grad_outputs = {"y"};
    const float alpha = d.alpha, beta = d.beta;
    c.forward = [=](OpRun& r) { r.backend.add_forward(r["y"], r["a"], r["b"], alpha, beta); };
    c.backward = [=](OpRun& r) { r.backend.add_backward(r.opt("da"), r.opt("db"), r["dy"], alpha, beta); };
    out.push_back(std::move(c));
  }
  // b of a's shape, then gates repeated over a's leading elements: per channel [D], a [T, D]
  // table, a scalar [1]; the last is above the threading grain.
  std::vector<std::pair<Shape, Shape>> muls;
  for (const Shape& s : shapes) muls.emplace_back(s, s);
  muls.insert(muls.end(), {{Shape{3, 7, 33}, Shape{33}},
                           {Shape{3, 7, 33}, Shape{7, 33}},
                           {Shape{2, 3, 5}, Shape{1}},
                           {Shape{4, 100, 90}, Shape{90}}});
  for (const auto& [as, bs] : muls) {
    OpCase c;
    c.op = "mul";
    c.name = as == bs ? "x" + dims(as) : "a" + dims(as) + "_b" + dims(bs);
    c.reduction = static_cast<double>(as.numel() / bs.numel());
    c.inputs = {value("a", as), value("b", bs)};
    c.outputs = {value("y", as)};
    c.grad_inputs = {"a", "b"};
    c.grad_outputs = {"y"};
    c.forward = [](OpRun& r) { r.backend.mul_forward(r["y"], r["a"], r["b"]); };
    c.backward = [](OpRun& r) { r.backend.mul_backward(r.opt("da"), r.opt("db"), r["dy"], r["a"], r["b"]); };
    out.push_back(std::move(c));
  }
  for (const Shape& s : shapes) {  // y (F32) += alpha * x (run dtype): gradient accumulation
    OpCase c;
    c.op = "axpy";
    c.name = cat("x", dims(s));
    c.inputs = {f32("y", s), value("x", s)};
    c.inplace = {"y"};
    c.forward = [](OpRun& r) { r.backend.axpy(r["y"], r["x"], -0.75f); };
    out.push_back(std::move(c));
  }
  for (const float p : {0.0f, 0.1f, 0.5f})
    for (const Shape& s : shapes) {
      OpCase c;
      c.op = "dropout";
      c.name = cat("p", static_cast<int>(p * 100), "_x", dims(s));
      c.inputs = {value("x", s)};
      c.outputs = {value("y", s)};
      c.grad_inputs = {"x"};
      c.grad_outputs = {"y"};
      const RngKey key{99, 5, 17};
      c.forward = [=](OpRun& r) { r.backend.dropout_forward(r["y"], r["x"], p, key); };
      c.backward = [=](OpRun& r) { r.backend.dropout_backward(r["dx"], r["dy"], p, key); };
      out.push_back(std::move(c));
    }
  for (const float p : {0.1f, 0.5f})  // the fused residual add; its backward as ops::dropout_add runs it
    for (const Shape& s : shapes) {
      OpCase c;
      c.op = "dropout_add";
      c.name = cat("p", static_cast<int>(p * 100), "_x", dims(s));
      c.needs = {OptionalOp::dropout_add};
      c.inputs = {value("x", s), value("h", s)};
      c.outputs = {value("y", s)};
      c.grad_inputs = {"x", "h"};
      c.grad_outputs = {"y"};
      const RngKey key{99, 5, 17};
      c.forward = [=](OpRun& r) { r.backend.dropout_add_forward(r["y"], r["x"], r["h"], p, key); };
      c.backward = [=](OpRun& r) {
        r.backend.axpy(r["dx"], r["dy"], 1.0f);
        r.backend.dropout_backward(r["dh"], r["dy"], p, key);
      };
      out.push_back(std::move(c));
    }
}

// ---- embedding, head split/merge, KV-cache time-slice write
void add_embedding_heads(std::vector<OpCase>& out) {
  struct E {
    Shape ids;
    std::int64_t V, D;
  };
  for (const E& e : std::vector<E>{{Shape{7}, 5, 3}, {Shape{2, 9}, 33, 8}, {Shape{1}, 1, 65}, {Shape{3, 100}, 50, 130}}) {
    OpCase c;
    c.op = "embedding";
    c.name = "ids" + dims(e.ids) + "_V" + num(e.V) + "_D" + num(e.D);
    std::vector<double> ids;
    for (std::int64_t n = 0; n < e.ids.numel(); ++n) ids.push_back(static_cast<double>((n * 7 + 3) % e.V));  // repeats
    c.inputs = {fixed_i32("ids", e.ids, ids), param("table", Shape{e.V, e.D})};
    const Shape ys = e.ids.rank() == 2 ? Shape{e.ids[0], e.ids[1], e.D} : Shape{e.ids[0], e.D};
    c.outputs = {value("y", ys)};
    c.grad_inputs = {"table"};
    c.grad_outputs = {"y"};
    c.reduction = static_cast<double>(e.ids.numel());
    c.forward = [](OpRun& r) { r.backend.embedding_forward(r["y"], r["ids"], r["table"]); };
    c.backward = [](OpRun& r) { r.backend.embedding_backward(r["dtable"], r["dy"], r["ids"]); };
    out.push_back(std::move(c));
  }
  struct Hd {
    std::int64_t B, T, H, Dh;
    int parts, part;
  };
  for (const Hd& h :
       std::vector<Hd>{{2, 3, 2, 4, 1, 0}, {2, 7, 3, 5, 3, 0}, {1, 5, 2, 3, 3, 1}, {3, 1, 1, 7, 3, 2}, {4, 64, 4, 32, 3, 2}}) {
    OpCase c;
    c.op = "split_heads";
    c.name = "B" + num(h.B) + "_T" + num(h.T) + "_H" + num(h.H) + "_Dh" + num(h.Dh) + "_part" + num(h.part) + "of" + num(h.parts);
    c.inputs = {value("x", Shape{h.B, h.T, h.parts * h.H * h.Dh})};
    c.outputs = {value("y", Shape{h.B, h.H, h.T, h.Dh})};
    c.grad_inputs = {"x"};
    c.grad_outputs = {"y"};
    const int parts = h.parts, part = h.part;
    c.forward = [=](OpRun& r) { r.backend.split_heads_forward(r["y"], r["x"], parts, part); };
    c.backward = [=](OpRun& r) { r.backend.split_heads_backward(r["dx"], r["dy"], parts, part); };
    out.push_back(std::move(c));
  }
  for (const Hd& h : std::vector<Hd>{{2, 3, 2, 4, 1, 0}, {1, 7, 3, 5, 1, 0}, {3, 1, 1, 7, 1, 0}, {4, 64, 4, 32, 1, 0}}) {
    OpCase c;
    c.op = "merge_heads";
    c.name = "B" + num(h.B) + "_T" + num(h.T) + "_H" + num(h.H) + "_Dh" + num(h.Dh);
    c.inputs = {value("x", Shape{h.B, h.H, h.T, h.Dh})};
    c.outputs = {value("y", Shape{h.B, h.T, h.H * h.Dh})};
    c.grad_inputs = {"x"};
    c.grad_outputs = {"y"};
    c.forward = [](OpRun& r) { r.backend.merge_heads_forward(r["y"], r["x"]); };
    c.backward = [](OpRun& r) { r.backend.merge_heads_backward(r["dx"], r["dy"]); };
    out.push_back(std::move(c));
  }
  // KV-cache write (forward only): rows offset .. offset+T-1 of cache[B, H, S, Dh] = kv[B, H, T, Dh].
  // The cache is an in-place input with random contents, so parity covers the untouched rows too.
  struct W {
    std::int64_t B, H, S, T, Dh, offset;
  };
  for (const W& w : std::vector<W>{{2, 3, 7, 1, 4, 0},        // first decoding step
                                   {2, 3, 7, 1, 4, 3},        // a middle step
                                   {2, 3, 7, 1, 4, 6},        // the last row of the cache
                                   {1, 2, 9, 3, 5, 4},        // T > 1 in the middle
                                   {3, 1, 5, 2, 7, 3},        // T > 1 ending exactly at S
                                   {1, 2, 4, 4, 3, 0},        // T = S: the whole cache
                                   {4, 4, 72, 64, 32, 8}}) {  // at backend_onednn's threading grain, ending at S
    OpCase c;
    c.op = "write_time_slice";
    c.name = "B" + num(w.B) + "_H" + num(w.H) + "_S" + num(w.S) + "_T" + num(w.T) + "_Dh" + num(w.Dh) + "_offset" + num(w.offset);
    c.inputs = {value("cache", Shape{w.B, w.H, w.S, w.Dh}), value("kv", Shape{w.B, w.H, w.T, w.Dh})};
    c.inplace = {"cache"};
    const std::int64_t offset = w.offset;
    c.forward = [offset](OpRun& r) { r.backend.write_time_slice(r["cache"], r["kv"], offset); };
    out.push_back(std::move(c));
  }
}

}  // namespace ablate::testing::catalogue
