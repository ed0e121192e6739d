// Op cases (op_cases.hpp) of the loss and optimizer ops (cross entropy, sum of squares, Adam,
// casts, memory) and of the optional ops (rope, slice_last, softmax/sum over the last dim, exp and
// sigmoid).
#include <cmath>
#include <vector>

#include "ablate/bf16.hpp"
#include "backends/op_cases_catalogue.hpp"

namespace ablate::testing::catalogue {

// ---- cross entropy (fused: its "backward" scales the forward's dlogits by the upstream
// gradient of the loss into the logits' gradient), sum of squares, Adam, cast, memory ops
// ---- rope: x[B, H, T, Dh] turned by position (an optional op: backends that lack it skip)
void add_rope(std::vector<OpCase>& out) {
  struct Rp {
    std::string name;
    Shape x;
    int rotary;
    float base;
    std::vector<double> positions;  // [T]
  };
  auto from = [](std::int64_t first, std::int64_t T) {
    std::vector<double> p;
    for (std::int64_t t = 0; t < T; ++t) p.push_back(static_cast<double>(first + t));
    return p;
  };
  const std::vector<Rp> ropes = {
      {"full", Shape{2, 3, 5, 8}, 8, 10000.0f, from(0, 5)},
      {"partial_offset", Shape{1, 2, 7, 6}, 4, 10000.0f, from(3, 7)},   // half-rotary dims copied; decoding offset
      {"far_positions", Shape{2, 2, 3, 4}, 4, 500.0f, {100, 2047, 5}},  // large angles
      {"above_grain", Shape{4, 4, 64, 64}, 32, 10000.0f, from(0, 64)},  // onednn's threaded path
  };
  for (const Rp& p : ropes) {
    OpCase c;
    c.op = "rope";
    c.name = p.name + "_x" + dims(p.x) + "_r" + std::to_string(p.rotary);
    c.needs = {OptionalOp::rope};
    c.inputs = {value("x", p.x), fixed_i32("positions", Shape{p.x[2]}, p.positions)};
    c.outputs = {value("y", p.x)};
    c.grad_inputs = {"x"};
    c.grad_outputs = {"y"};
    const int rotary = p.rotary;
    const float base = p.base;
    c.forward = [=](OpRun& r) { r.backend.rope_forward(r["y"], r["x"], r["positions"], rotary, base); };
    c.backward = [=](OpRun& r) { r.backend.rope_backward(r["dx"], r["dy"], r["positions"], rotary, base); };
    // The same turn with given frequencies: base's divided by 4 (interpolated positions), then
    // rising and falling ones (YaRN-like per-pair scaling; a negative one turns the other way).
    for (const bool interpolated : {true, false}) {
      OpCase f = c;
      f.op = "rope_frequencies";
      f.name = cat(p.name, "_x", dims(p.x), "_r", rotary, interpolated ? "_interpolated" : "_mixed");
      f.needs = {OptionalOp::rope_frequencies};
      TensorSpec freqs = f32("freqs", Shape{rotary / 2});
      for (int i = 0; i < rotary / 2; ++i)
        freqs.fixed.push_back(interpolated ? 0.25 * std::pow(static_cast<double>(base), -2.0 * i / rotary)
                                           : (i % 2 == 0 ? 1.0 : -0.5) / (1.0 + i));
      f.inputs.push_back(freqs);
      f.forward = [](OpRun& r) { r.backend.rope_frequencies_forward(r["y"], r["x"], r["positions"], r["freqs"]); };
      f.backward = [](OpRun& r) { r.backend.rope_frequencies_backward(r["dx"], r["dy"], r["positions"], r["freqs"]); };
      out.push_back(std::move(f));
    }
    out.push_back(std::move(c));
  }
}

// ---- slice_last: y[N, W] = x[N, offset : offset + W] (an optional op)
void add_slice(std::vector<OpCase>& out) {
  struct Sl {
    Shape x;
    std::int64_t offset, width;
  };
  const std::vector<Sl> slices = {{Shape{5}, 0, 5},              // the whole
                                  {Shape{3, 7}, 2, 3},           // the middle
                                  {Shape{2, 3, 65}, 33, 32},     // the end
                                  {Shape{4, 100, 96}, 32, 64}};  // above onednn's threading grain
  for (const Sl& s : slices) {
    OpCase c;
    c.op = "slice_last";
    c.name = "x" + dims(s.x) + "_at" + std::to_string(s.offset) + "_w" + std::to_string(s.width);
    c.needs = {OptionalOp::slice_last};
    c.inputs = {value("x", s.x)};
    c.outputs = {value("y", s.x.with_last(s.width))};
    c.grad_inputs = {"x"};
    c.grad_outputs = {"y"};
    const std::int64_t offset = s.offset;
    c.forward = [=](OpRun& r) { r.backend.slice_last_forward(r["y"], r["x"], offset); };
    c.backward = [=](OpRun& r) { r.backend.slice_last_backward(r["dx"], r["dy"], offset); };
    out.push_back(std::move(c));
  }
}

// ---- the small general set: softmax and sum over the last dim, exp and sigmoid (optional ops)
void add_rowwise(std::vector<OpCase>& out) {
  const std::vector<Shape> shapes = {Shape{1}, Shape{3, 7}, Shape{2, 3, 65}, Shape{4, 100, 96}};  // the last above the grain
  for (const Shape& s : shapes) {
    {
      OpCase c;
      c.op = "softmax_last";
      c.name = cat("x", dims(s));
      c.needs = {OptionalOp::softmax_last};
      c.reduction = static_cast<double>(s.last());
      c.inputs = {value("x", s, -3, 3)};
      c.outputs = {value("y", s)};
      c.grad_inputs = {"x"};
      c.grad_outputs = {"y"};
      c.forward = [](OpRun& r) { r.backend.softmax_last_forward(r["y"], r["x"]); };
      c.backward = [](OpRun& r) { r.backend.softmax_last_backward(r["dx"], r["dy"], r["y"]); };
      out.push_back(std::move(c));
    }
    {
      OpCase c;
      c.op = "sum_last";
      c.name = cat("x", dims(s));
      c.needs = {OptionalOp::sum_last};
      c.reduction = static_cast<double>(s.last());
      c.inputs = {value("x", s)};
      c.outputs = {value("y", s.with_last(1))};
      c.grad_inputs = {"x"};
      c.grad_outputs = {"y"};
      c.forward = [](OpRun& r) { r.backend.sum_last_forward(r["y"], r["x"]); };
      c.backward = [](OpRun& r) { r.backend.sum_last_backward(r["dx"], r["dy"]); };
      out.push_back(std::move(c));
    }
    for (const Pointwise f : {Pointwise::exp, Pointwise::sigmoid}) {
      OpCase c;
      c.op = pointwise_name(f);
      c.name = cat("x", dims(s));
      c.needs = {OptionalOp::pointwise};
      c.inputs = {value("x", s, -2, 2)};
      c.outputs = {value("y", s)};
      c.grad_inputs = {"x"};
      c.grad_outputs = {"y"};
      c.forward = [f](OpRun& r) { r.backend.pointwise_forward(r["y"], r["x"], f); };
      c.backward = [f](OpRun& r) { r.backend.pointwise_backward(r["dx"], r["dy"], r["y"], f); };
      out.push_back(std::move(c));
    }
  }
}

namespace {
// The loss ops: cross-entropy (label smoothing, ignored rows) and the sum of squares.
void add_loss(std::vector<OpCase>& out) {
  struct X {
    std::int64_t N, V;
    float ls;
    std::vector<double> targets;
  };
  const std::vector<X> xs = {{1, 1, 0.0f, {0}},
                             {7, 3, 0.0f, {0, 1, 2, -100, 1, 1, 0}},
                             {7, 3, 0.1f, {0, 1, 2, -100, 1, 1, 0}},
                             {5, 33, 0.2f, {32, -100, 0, 17, 5}},
                             {3, 65, 0.0f, {-100, -100, -100}},  // every row ignored
                             {4, 65, 0.1f, {64, 3, 3, 40}},
                             {400, 100, 0.1f, {}}};  // above the grain; targets generated below
  for (const X& x : xs) {
    OpCase c;
    c.op = "cross_entropy";
    c.name = "N" + num(x.N) + "_V" + num(x.V) + "_ls" + num(static_cast<std::int64_t>(x.ls * 100));
    c.reduction = static_cast<double>(x.V);
    std::vector<double> targets = x.targets;
    for (std::int64_t n = static_cast<std::int64_t>(targets.size()); n < x.N; ++n)  // every 9th row ignored
      targets.push_back(n % 9 == 4 ? -100.0 : static_cast<double>((n * 13) % x.V));
    c.inputs = {value("logits", Shape{x.N, x.V}, -3, 3), fixed_i32("targets", Shape{x.N}, targets)};
    c.outputs = {f32("loss", Shape{1}), value("grad_logits", Shape{x.N, x.V}), f32("stats", Shape{2})};
    c.grad_inputs = {"logits"};
    c.grad_outputs = {"loss"};
    c.finite_differences = x.N * x.V < 10000;
    const float ls = x.ls;
    c.forward = [=](OpRun& r) {
      r.backend.cross_entropy_forward(r["loss"], r["grad_logits"], r["stats"], r["logits"], r["targets"], -100, ls);
    };
    c.backward = [](OpRun& r) { r.backend.axpy(r["dlogits"], r["grad_logits"], r.scalar("dloss")); };
    out.push_back(std::move(c));
  }
  {  // tied maxima: the prediction is the first of them (row 0, maxima 1, 2, 4, misses its target 2;
     // row 1, maxima 0, 1, 2, 4, hits its target 0)
    OpCase c;
    c.op = "cross_entropy";
    c.name = "tied_maxima_N2_V5";
    c.reduction = 5;
    TensorSpec logits = value("logits", Shape{2, 5});
    logits.fixed = {1, 3, 3, 0, 3, 2, 2, 2, -1, 2};
    c.inputs = {logits, fixed_i32("targets", Shape{2}, {2, 0})};
    c.outputs = {f32("loss", Shape{1}), value("grad_logits", Shape{2, 5}), f32("stats", Shape{2})};
    c.finite_differences = false;  // parity: the counts in stats
    c.forward = [](OpRun& r) {
      r.backend.cross_entropy_forward(r["loss"], r["grad_logits"], r["stats"], r["logits"], r["targets"], -100, 0.0f);
    };
    out.push_back(std::move(c));
  }
  for (const Shape& s : {Shape{1}, Shape{3, 33}, Shape{2, 3, 65}}) {
    OpCase c;
    c.op = "sum_squares";
    c.name = cat("x", dims(s));
    c.reduction = static_cast<double>(s.numel());
    c.inputs = {f32("total", Shape{1}, 0.5, 2), value("x", s)};
    c.inplace = {"total"};
    c.forward = [](OpRun& r) { r.backend.sum_squares(r["total"], r["x"]); };
    out.push_back(std::move(c));
  }
}

// The optimizer's and the runtime's ops: Adam/AdamW updates, casts, copy and fill.
void add_optim_memory(std::vector<OpCase>& out) {
  struct Ad {
    std::string tag;
    AdamParams p;
    bool low;
  };
  AdamParams adam;
  adam.lr = 1e-2f;
  AdamParams adam_l2 = adam;
  adam_l2.weight_decay = 0.1f;
  adam_l2.step = 10;
  adam_l2.grad_scale = 0.5f;
  AdamParams adamw = adam_l2;
  adamw.decoupled = true;
  adamw.beta2 = 0.98f;
  adamw.eps = 1e-6f;
  // 7x33 and 8x36 (a multiple of 4 elements: what a backend may move in vector packs)
  for (const Ad& a :
       std::vector<Ad>{{"adam_step1", adam, false}, {"adam_l2_step10", adam_l2, true}, {"adamw_step10", adamw, true}})
    for (const Shape& s : {Shape{7, 33}, Shape{8, 36}}) {
      OpCase c;
      c.op = "adam_update";
      c.name = a.tag + "_x" + dims(s);
      c.bf16 = false;
      c.inputs = {f32("w", s), f32("m", s, -0.1, 0.1), f32("v", s, 0.0, 0.01), f32("grad", s)};
      if (a.low) c.outputs = {spec("w_low", s, Role::BF16)};
      c.inplace = {"w", "m", "v"};
      const AdamParams p = a.p;
      c.forward = [p](OpRun& r) { r.backend.adam_update(r["w"], r["m"], r["v"], r.opt("w_low"), r["grad"], p); };
      out.push_back(std::move(c));
    }
  for (const Shape& s : {Shape{1}, Shape{3, 33}}) {
    OpCase c;
    c.op = "cast";
    c.name = "to_bf16_x" + dims(s);
    c.bf16 = false;
    c.inputs = {f32("x", s, -100, 100)};
    c.outputs = {spec("y", s, Role::BF16)};
    c.forward = [](OpRun& r) { r.backend.cast(r["y"], r["x"]); };
    out.push_back(c);
    c.name = "to_run_dtype_x" + dims(s);  // bf16 run: bf16 -> f32; f32 run: a copy
    c.bf16 = true;
    c.inputs = {value("x", s, -100, 100)};
    c.outputs = {f32("y", s)};
    out.push_back(std::move(c));
  }
  {
    OpCase c;
    c.op = "memory";
    c.name = "fill_copy_x3x33";
    c.inputs = {value("x", Shape{3, 33})};
    c.outputs = {value("copied", Shape{99}), value("filled", Shape{3, 33}), spec("ids", Shape{5}, Role::I32)};
    c.forward = [](OpRun& r) {
      r.backend.copy(r["copied"], r["x"]);
      r.backend.fill(r["filled"], -1.25f);
      r.backend.fill(r["ids"], 7.0f);
      r.backend.synchronize();
    };
    out.push_back(std::move(c));
  }
}
}  // namespace

void add_loss_optim(std::vector<OpCase>& out) {
  add_loss(out);
  add_optim_memory(out);
}

}  // namespace ablate::testing::catalogue
