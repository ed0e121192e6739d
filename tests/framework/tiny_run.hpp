// The tiny runs that tests train in-process with `ablate run`: one spec, written out by TinyRun,
// with the knobs those tests turn (task, model size, backend, steps, log and eval cadence). Each
// test names only what its run does differently from the default, a copy task learnt to exact copies.
#pragma once

#include <string>

namespace ablate::testing {

// The `task:` of a synthetic sequence task (copy, reverse and sort take the same options):
// vocab_size ids (3 of them reserved), sequences of 2 .. max_len tokens.
inline std::string sequence_task(int train_examples, int eval_examples, int vocab_size = 8, int max_len = 4,
                                 const std::string& plugin = "copy") {
  return "{plugin: " + plugin + ", vocab_size: " + std::to_string(vocab_size) +
         ", min_len: 2, max_len: " + std::to_string(max_len) + ", train_examples: " + std::to_string(train_examples) +
         ", eval_examples: " + std::to_string(eval_examples) + "}";
}

// A tiny run's spec. The defaults: an encoder-decoder that learns the copy task to exact copies in
// 400 steps on 2 cores. Strings are YAML values written as they are; "" leaves the key out.
struct TinyRun {
  std::string name = "tiny_copy";
  std::string task = sequence_task(4000, 64);
  std::string arch = "encoder_decoder";
  int d_model = 32;  // 2 heads, d_ff 2 * d_model, no dropout
  int layers = 1;
  bool embedding_dropout = false;  // write embedding_dropout: 0.0 (its default, dropout, is 0.0 too)
  std::string block = "pre_norm";
  std::string backend = "onednn";
  int steps = 400;
  int batch_size = 32;
  std::string lr = "3.0e-3";   // optimizer: {lr: ...}
  std::string optimizer = "";  // more of train.optimizer's map, e.g. "plugin: lion, beta2: 0.95"
  std::string schedule = "";
  bool clip_grad_norm = true;  // clip_grad_norm: 1.0
  int seed = 1;
  int log_every = 10;
  int attention_every = 0;  // log.attention: {every: ..., probe_examples: 2}; 0: none
  int eval_every = 100;
  int eval_batches = 2;
  std::string metrics = "loss, token_accuracy, exact_match";
  std::string generate = "";  // eval.generate

  std::string yaml() const {
    const auto n = [](int v) { return std::to_string(v); };
    std::string s = "name: " + name + "\ntask: " + task + "\n";
    s += "model: {arch: " + arch + ", d_model: " + n(d_model) + ", heads: 2, layers: " + n(layers) + ", d_ff: " + n(2 * d_model) +
         ", dropout: 0.0" + (embedding_dropout ? ", embedding_dropout: 0.0" : "") + (block.empty() ? "" : ", block: " + block) +
         "}\n";
    s += "backend: " + backend + "\n";
    s += "train: {steps: " + n(steps) + ", batch_size: " + n(batch_size) +
         (lr.empty() && optimizer.empty()
              ? ""
              : ", optimizer: {" + (lr.empty() ? "" : "lr: " + lr + (optimizer.empty() ? "" : ", ")) + optimizer + "}") +
         (schedule.empty() ? "" : ", schedule: " + schedule) + (clip_grad_norm ? ", clip_grad_norm: 1.0" : "") +
         ", seed: " + n(seed) + "}\n";
    s += "log: {every: " + n(log_every) +
         (attention_every ? ", attention: {every: " + n(attention_every) + ", probe_examples: 2}" : "") + "}\n";
    s += "eval: {every: " + n(eval_every) + ", batches: " + n(eval_batches) + ", metrics: [" + metrics + "]" +
         (generate.empty() ? "" : ",\n       generate: " + generate) + "}\n";
    return s;
  }
};

}  // namespace ablate::testing
