// RunRecorder (run_recorder.hpp): the run file's layout derived from the experiment, and the
// probe passes behind the attention logs and per-layer statistics.
#include "train/run_recorder.hpp"

#include <algorithm>
#include <numeric>

#include "ablate/error.hpp"
#include "ablate/philox.hpp"
#include "train/layer_stats.hpp"

namespace ablate::train {
namespace {

results::ProbeTokens probe_side(std::int64_t length, const std::vector<std::int32_t>& ids,
                                const std::vector<std::int32_t>& lengths, std::vector<std::string> texts) {
  results::ProbeTokens t;
  t.length = length;
  t.ids = ids;
  t.lengths = lengths;
  t.texts = std::move(texts);  // "" for tasks without text (synthetic ids)
  t.texts.resize(lengths.size());
  return t;
}

std::vector<float> as_floats(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// log.attention.probe = repeated: E examples of random content tokens whose first half is repeated
// as the second half ([r1 .. rn r1 .. rn], n = half the longest sequence the task makes), drawn
// from a fixed Philox key so that every run (every arm and seed) sees the same probe. A seq2seq
// example gets the sequence on both sides; a classifier's label is class 0.
std::vector<Example> repeated_probe(const TaskInfo& task, std::int64_t E) {
  const bool lm = task.type == TaskType::LanguageModel;
  const std::int64_t longest = lm                                      ? task.max_tgt_len
                               : task.type == TaskType::Classification ? task.max_src_len
                                                                       : std::min(task.max_src_len, task.max_tgt_len);
  const std::int64_t content = task.vocab_size - 3;  // ids 3 .. vocab_size - 1
  if (longest < 4 || content < 2)
    throw UsageError(
        "log.attention.probe: repeated needs sequences of at least 4 tokens and 2 content tokens (the task "
        "makes " +
            std::to_string(longest) + " and has " + std::to_string(content) + ")",
        "use log.attention.probe: eval for this task");
  const auto n = static_cast<std::size_t>(longest / 2);
  const RngKey key{0x5EED, 0, 0x9A0BEu};  // a fixed key, not the run's seed: the same probe in every run
  std::uint64_t draws = 0;
  float u[4];
  const auto next_token = [&]() {
    if (draws % 4 == 0) philox_uniform4(key, draws / 4, u);
    const auto k = std::min(content - 1, static_cast<std::int64_t>(u[draws++ % 4] * static_cast<float>(content)));
    return static_cast<std::int32_t>(3 + k);
  };
  std::vector<Example> out;
  for (std::int64_t e = 0; e < E; ++e) {
    std::vector<std::int32_t> half(n);
    for (auto& t : half) t = next_token();
    std::vector<std::int32_t> seq = half;
    seq.insert(seq.end(), half.begin(), half.end());
    Example ex;
    if (task.type == TaskType::Classification) {
      ex.src = seq;
      ex.tgt = {0};
    } else {
      if (!lm) ex.src = seq;
      ex.tgt = seq;
    }
    out.push_back(std::move(ex));
  }
  return out;
}

}  // namespace

RunRecorder::RunRecorder(Experiment& ex, std::vector<std::string> train_metrics, std::vector<std::string> eval_metrics,
                         std::int64_t samples)
    : ex_(ex) {
  const model::ModelConfig& c = ex.model->config();
  const bool repeated = ex.spec.log.attention.probe == spec::ProbeKind::repeated;
  const std::int64_t E =
      repeated ? ex.spec.log.attention.probe_examples : std::min(ex.spec.log.attention.probe_examples, ex.size(Split::Eval));
  std::vector<std::int64_t> indices(static_cast<std::size_t>(E));
  std::iota(indices.begin(), indices.end(), 0);
  const std::vector<Example> examples = repeated ? repeated_probe(ex.task_info, E) : ex.examples(Split::Eval, indices);
  const HostBatch hb = make_batch(examples);
  std::vector<std::string> src_texts, tgt_texts;
  for (const Example& e : examples) {
    src_texts.push_back(ex.text(e.src, false));
    tgt_texts.push_back(ex.text(e.tgt, true));
  }
  probe_batch_ = model::upload_batch(*ex.backend, hb, c, ex.compute);
  src_lengths_ = hb.src_lengths;
  tgt_lengths_ = hb.tgt_lengths;

  layout_.train_metrics = std::move(train_metrics);
  layout_.eval_metrics = std::move(eval_metrics);
  layout_.samples.count = samples;
  layout_.probe.examples = E;
  const bool lm = c.arch == model::Arch::Decoder;
  // The decoder reads bos + target; a language model's only side is that input ("src" in the file).
  if (lm)
    layout_.probe.src = probe_side(hb.T, hb.tgt_in, hb.tgt_lengths, tgt_texts);
  else
    layout_.probe.src = probe_side(hb.S, hb.src, hb.src_lengths, src_texts);
  if (c.arch == model::Arch::EncoderDecoder)
    layout_.probe.tgt = probe_side(hb.T, hb.tgt_in, hb.tgt_lengths, tgt_texts);
  else  // no second side; a classifier's probe keeps each example's class as text (its label)
    layout_.probe.tgt = probe_side(0, {}, std::vector<std::int32_t>(static_cast<std::size_t>(E), 0),
                                   c.num_classes > 0 ? tgt_texts : std::vector<std::string>{});

  const std::int64_t H = c.dims.heads;
  auto slot = [&](const char* stack, const char* kind, std::int64_t layer, std::int64_t q, std::int64_t k,
                  results::AttentionMask mask, const char* q_side, const char* k_side) {
    layout_.attention.push_back({stack, kind, layer, H, q, k, mask, q_side, k_side});
    layout_.entropy.push_back({stack, kind, layer, H});
  };
  using M = results::AttentionMask;
  if (c.arch != model::Arch::Decoder)
    for (std::int64_t l = 0; l < c.encoder_layers; ++l) slot("encoder", "self", l, hb.S, hb.S, M::KeyPadding, "src", "src");
  if (c.arch != model::Arch::Encoder)
    for (std::int64_t l = 0; l < c.decoder_layers; ++l) {
      const char* side = lm ? "src" : "tgt";
      slot("decoder", "self", l, hb.T, hb.T, c.causal ? M::CausalKeyPadding : M::KeyPadding, side, side);  // model.causal
      if (!lm) slot("decoder", "cross", l, hb.T, hb.S, M::KeyPadding, "tgt", "src");
    }
  if (c.arch == model::Arch::EncoderDecoder) layout_.decode = {c.decoder_layers, H, ex.task_info.max_tgt_len + 1, hb.S};

  layers_ = layer_names(*ex.store);
  layout_.stats = {{"residual_norm", layers_}, {"grad_norm", layers_}};
  results::validate(layout_);
}

void RunRecorder::create(const std::filesystem::path& file, const results::RunInfo& info) {
  writer_.emplace(results::RunWriter::create(file, info, layout_));
  if (ex_.spec.log.tensorboard) {
    events_.emplace(results::EventFile::create(file.parent_path()));
    results::tensorboard_spec(*events_, info, results::wall_time_now());
    events_->publish();
  }
}

void RunRecorder::resume(const std::filesystem::path& file, std::int64_t step) {
  writer_.emplace(results::RunWriter::resume(file, step, &layout_));
  // The event file, like the run file, drops what the stopped run logged after the checkpoint.
  if (ex_.spec.log.tensorboard) events_.emplace(results::EventFile::resume(file.parent_path(), step));
}

void RunRecorder::train(std::int64_t step, const std::vector<double>& values) {
  writer_->append_train(step, values);
  if (events_) results::tensorboard_metrics(*events_, "train", layout_.train_metrics, step, values, results::wall_time_now());
}

void RunRecorder::eval(std::int64_t step, const std::map<std::string, double>& values) {
  writer_->append_eval(step, values);
  if (events_) results::tensorboard_metrics(*events_, "eval", values, step, results::wall_time_now());
}

void RunRecorder::samples(std::int64_t step, const results::SamplesLog& log) {
  writer_->append_samples(step, log);
  if (events_) results::tensorboard_samples(*events_, step, log, results::wall_time_now());
}

void RunRecorder::flush() {
  writer_->flush();
  if (events_) events_->flush();
}

RunRecorder::ProbePass RunRecorder::probe_pass(std::int64_t step) {
  ProbePass pass;
  Graph g(*ex_.backend, static_cast<std::uint64_t>(ex_.spec.train.seed), static_cast<std::uint64_t>(step),
          /*training=*/false, /*grad=*/false);
  ex_.model->logits(g, probe_batch_, &pass.capture);
  for (const results::AttentionSlot& s : layout_.attention) {
    const auto it = std::find_if(pass.capture.attention.begin(), pass.capture.attention.end(),
                                 [&](const auto& a) { return a.stack == s.stack && a.kind == s.kind && a.layer == s.layer; });
    if (it == pass.capture.attention.end())
      throw Error("probe pass: no attention captured for " + s.path(), "the model and the run layout disagree");
    pass.attention.push_back(host_floats(*ex_.backend, it->probs));
  }
  return pass;
}

void RunRecorder::probe(std::int64_t step, bool stats, bool attention) {
  if (!stats && !attention) return;
  const ProbePass pass = probe_pass(step);
  if (stats) record_stats(step, pass);
  if (attention) record_attention(step, pass);
}

void RunRecorder::record_stats(std::int64_t step, const ProbePass& pass) {
  const std::vector<float> residual = as_floats(residual_norms(*ex_.backend, pass.capture, src_lengths_, tgt_lengths_));
  const std::vector<float> grads = as_floats(layer_grad_norms(*ex_.store, layers_));
  std::vector<std::vector<float>> entropy;
  for (std::size_t i = 0; i < layout_.attention.size(); ++i) {
    const results::AttentionSlot& s = layout_.attention[i];
    const bool src_queries = s.stack == "encoder";
    entropy.push_back(as_floats(attention_entropy(pass.attention[i], {probe_batch_.B, s.heads, s.queries, s.keys},
                                                  src_queries ? src_lengths_ : tgt_lengths_)));
  }
  results::StatsLog log;
  log.tables = {residual, grads};
  for (const auto& e : entropy) log.entropy.emplace_back(e);
  writer_->append_stats(step, log);
  if (events_) results::tensorboard_stats(*events_, layout_, step, log, results::wall_time_now());
}

void RunRecorder::record_attention(std::int64_t step, const ProbePass& pass) {
  results::AttentionLog log;
  for (const auto& a : pass.attention) log.slots.emplace_back(a);
  std::vector<std::int32_t> tokens, lengths;
  std::vector<std::vector<float>> cross;
  const results::DecodeLayout& d = layout_.decode;
  if (d.layers > 0) {
    model::ForwardCapture captured;
    const auto predictions = ex_.model->greedy_decode(*ex_.backend, probe_batch_, d.steps - 1, &captured);
    const std::int64_t E = layout_.probe.examples;
    tokens.assign(static_cast<std::size_t>(E * d.steps), TaskInfo::kPad);
    for (std::int64_t e = 0; e < E; ++e) {
      const auto& p = predictions[static_cast<std::size_t>(e)];
      lengths.push_back(static_cast<std::int32_t>(p.size()));
      std::copy(p.begin(), p.end(), tokens.begin() + e * d.steps);
    }
    cross.assign(static_cast<std::size_t>(d.layers),
                 std::vector<float>(static_cast<std::size_t>(E * d.heads * d.steps * d.keys), 0.0f));
    for (const auto& a : captured.attention) {  // probs [E, H, 1, S] of decode step a.step
      const std::vector<float> p = host_floats(*ex_.backend, a.probs);
      std::vector<float>& out = cross[static_cast<std::size_t>(a.layer)];
      for (std::int64_t eh = 0; eh < E * d.heads; ++eh)
        std::copy_n(p.begin() + eh * d.keys, d.keys, out.begin() + (eh * d.steps + a.step) * d.keys);
    }
    log.decode.tokens = tokens;
    log.decode.lengths = lengths;
    for (const auto& c : cross) log.decode.cross.emplace_back(c);
  }
  writer_->append_attention(step, log);
}

}  // namespace ablate::train
