// export_hf (hf_export.hpp): which decoder-only runs are exactly a transformers Llama or GPT-2,
// their weights renamed and re-laid out for it, config.json, and Ablate's own logits on a few eval
// examples to check a loaded model against.
#include "train/hf_export.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <vector>

#include "ablate/autograd.hpp"
#include "ablate/backend.hpp"
#include "ablate/error.hpp"
#include "core/atomic_file.hpp"
#include "core/text.hpp"
#include "train/run_export.hpp"

namespace ablate::train {
namespace fs = std::filesystem;

namespace {

std::string option(const spec::PluginRef& ref, const std::string& key, const std::string& fallback) {
  const auto it = ref.options.find(key);
  return it == ref.options.end() ? fallback : it->second;
}

[[noreturn]] void refuse(const std::string& what) {
  throw UsageError("ablate export --format hf: " + what + " has no counterpart in a transformers Llama or GPT-2",
                   "Llama: model.block pre_norm with norm rms_norm, positional_encoding rotary (fraction 1), ffn swiglu; "
                   "GPT-2: pre_norm with layer_norm, learned positions, relu or gelu; both: arch decoder, attention mha "
                   "without qk_norm or logit_softcap, final_norm, tie_embeddings, no scale_embedding, embedding_norm or fixnorm");
}

// A parameter's host copy.
struct HostParam {
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};

// Rows [begin, end) of a [R, C] matrix (or of a vector).
std::vector<float> rows(const HostParam& p, std::int64_t begin, std::int64_t end) {
  const std::int64_t cols = p.shape.size() == 2 ? p.shape[1] : 1;
  return {p.values.begin() + begin * cols, p.values.begin() + end * cols};
}

// [R, C] -> [C, R] (GPT-2's Conv1D keeps weights as [in, out]).
std::vector<float> transposed(const HostParam& p) {
  const std::int64_t r = p.shape[0], c = p.shape[1];
  std::vector<float> out(p.values.size());
  for (std::int64_t i = 0; i < r; ++i)
    for (std::int64_t j = 0; j < c; ++j) out[static_cast<std::size_t>(j * r + i)] = p.values[static_cast<std::size_t>(i * c + j)];
  return out;
}

}  // namespace

std::string hf_architecture(const spec::ExperimentSpec& spec) {
  const spec::ModelSpec& m = spec.model;
  if (m.arch != Arch::Decoder) refuse(std::string("model.arch ") + to_string(m.arch) + " (a decoder-only model maps)");
  if (!m.causal) refuse("model.causal false");
  if (m.block.name != "pre_norm") refuse("model.block " + m.block.name);
  if (!m.final_norm) refuse("model.final_norm false");
  if (!m.tie_embeddings) refuse("model.tie_embeddings false (the output projection has a bias)");
  if (m.scale_embedding) refuse("model.scale_embedding true (embeddings times sqrt(d_model))");
  if (m.embedding_norm) refuse("model.embedding_norm true");
  if (m.fixnorm > 0) refuse("model.fixnorm " + std::to_string(m.fixnorm) + " (embeddings of a fixed length)");
  if (m.attention.name != "mha") refuse("model.attention " + m.attention.name);
  if (const std::string q = option(m.attention, "qk_norm", "none"); q != "none") refuse("model.attention.qk_norm " + q);
  if (const std::string c = option(m.attention, "logit_softcap", "0"); std::stod(c) != 0)
    refuse("model.attention.logit_softcap " + c);
  const std::string norm = option(m.block, "norm", "layer_norm");
  const std::string& pe = m.positional_encoding.name;
  if (norm == "rms_norm" && pe == "rotary" && m.ffn.name == "swiglu") {
    if (const std::string f = option(m.positional_encoding, "fraction", "1.0"); std::stod(f) != 1.0)
      refuse("model.positional_encoding.fraction " + f + " (Llama rotates every dim of a head)");
    return "llama";
  }
  if (norm == "layer_norm" && pe == "learned" && (m.ffn.name == "relu" || m.ffn.name == "gelu")) {
    if (const std::string kv = option(m.attention, "kv_heads", "0"); kv != "0" && std::stoll(kv) != m.heads)
      refuse("model.attention.kv_heads " + kv + " (GPT-2 has as many k/v heads as heads; Llama maps grouped heads)");
    return "gpt2";
  }
  refuse("model.block.norm " + norm + " with model.positional_encoding " + pe + " and model.ffn " + m.ffn.name);
}

HfExportResult export_hf(TrainedRun& run, const fs::path& dir) {
  Experiment& ex = *run.experiment;
  const std::string arch = hf_architecture(ex.spec);
  std::error_code ec;
  if (fs::exists(dir, ec) && !(fs::is_directory(dir, ec) && fs::is_empty(dir, ec)))
    throw UsageError("ablate export: " + dir.string() + " exists and is not an empty folder",
                     "export never writes over files: name a new folder with --out");

  std::map<std::string, HostParam> p;
  for (Parameter* param : ex.store->all()) {
    const Tensor& v = param->value;
    if (v.dtype() != DType::F32) throw Error("export: parameter " + param->name + " is " + v.str() + ", expected f32");
    HostParam& h = p[param->name];
    for (int d = 0; d < v.shape().rank(); ++d) h.shape.push_back(v.shape()[d]);
    h.values.resize(static_cast<std::size_t>(v.numel()));
    ex.backend->copy_to_host(h.values.data(), v);
  }
  auto get = [&](const std::string& name) -> const HostParam& {
    const auto it = p.find(name);
    if (it == p.end())
      throw Error("export --format hf: the model has no parameter " + name, "the model and the mapping disagree");
    return it->second;
  };
  const spec::ModelSpec& m = ex.spec.model;
  const HostParam& embedding = get("decoder.embedding.weight");
  const std::int64_t V = embedding.shape[0], D = embedding.shape[1], L = m.decoder_layers, H = m.heads, Dh = D / H;
  const std::int64_t K = (get("decoder.layers.0.self_attn.qkv.weight").shape[0] - D) / 2;  // kv heads * Dh

  std::vector<SafeTensor> out;
  auto put = [&](const std::string& name, std::vector<std::int64_t> shape, const std::vector<float>& values) {
    out.push_back(f32_tensor(name, std::move(shape), values));
  };
  auto bias_or_zeros = [&](const std::string& name, std::int64_t begin, std::int64_t end) {
    return p.count(name) ? rows(p.at(name), begin, end) : std::vector<float>(static_cast<std::size_t>(end - begin), 0.0f);
  };
  std::string config;
  if (arch == "llama") {
    const std::int64_t F = get("decoder.layers.0.ffn.gate.weight").shape[0];
    const bool attention_bias = m.qkv_bias || m.out_bias, mlp_bias = p.count("decoder.layers.0.ffn.gate.bias") > 0;
    put("model.embed_tokens.weight", {V, D}, embedding.values);
    for (std::int64_t l = 0; l < L; ++l) {
      const std::string a = "decoder.layers." + std::to_string(l) + ".", b = "model.layers." + std::to_string(l) + ".";
      const HostParam& qkv = get(a + "self_attn.qkv.weight");
      put(b + "input_layernorm.weight", {D}, get(a + "norm0.gamma").values);
      put(b + "self_attn.q_proj.weight", {D, D}, rows(qkv, 0, D));
      put(b + "self_attn.k_proj.weight", {K, D}, rows(qkv, D, D + K));
      put(b + "self_attn.v_proj.weight", {K, D}, rows(qkv, D + K, D + 2 * K));
      put(b + "self_attn.o_proj.weight", {D, D}, get(a + "self_attn.out.weight").values);
      if (attention_bias) {
        put(b + "self_attn.q_proj.bias", {D}, bias_or_zeros(a + "self_attn.qkv.bias", 0, D));
        put(b + "self_attn.k_proj.bias", {K}, bias_or_zeros(a + "self_attn.qkv.bias", D, D + K));
        put(b + "self_attn.v_proj.bias", {K}, bias_or_zeros(a + "self_attn.qkv.bias", D + K, D + 2 * K));
        put(b + "self_attn.o_proj.bias", {D}, bias_or_zeros(a + "self_attn.out.bias", 0, D));
      }
      put(b + "post_attention_layernorm.weight", {D}, get(a + "norm1.gamma").values);
      put(b + "mlp.gate_proj.weight", {F, D}, get(a + "ffn.gate.weight").values);
      put(b + "mlp.up_proj.weight", {F, D}, get(a + "ffn.up.weight").values);
      put(b + "mlp.down_proj.weight", {D, F}, get(a + "ffn.out.weight").values);
      if (mlp_bias) {
        put(b + "mlp.gate_proj.bias", {F}, get(a + "ffn.gate.bias").values);
        put(b + "mlp.up_proj.bias", {F}, get(a + "ffn.up.bias").values);
        put(b + "mlp.down_proj.bias", {D}, get(a + "ffn.out.bias").values);
      }
    }
    put("model.norm.weight", {D}, get("decoder.final_norm.gamma").values);
    config =
        "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n  \"vocab_size\": " + std::to_string(V) +
        ",\n  \"hidden_size\": " + std::to_string(D) + ",\n  \"intermediate_size\": " + std::to_string(F) +
        ",\n  \"num_hidden_layers\": " + std::to_string(L) + ",\n  \"num_attention_heads\": " + std::to_string(H) +
        ",\n  \"num_key_value_heads\": " + std::to_string(K / Dh) +
        ",\n  \"hidden_act\": \"silu\",\n  \"max_position_embeddings\": 4096,\n  \"rms_norm_eps\": " + number_text(m.norm_eps) +
        ",\n  \"rope_theta\": " + option(m.positional_encoding, "base", "10000") +
        ",\n  \"attention_bias\": " + (attention_bias ? "true" : "false") +
        ",\n  \"mlp_bias\": " + (mlp_bias ? "true" : "false") + ",\n  \"tie_word_embeddings\": true";
  } else {
    const HostParam& positions = get("decoder.positions.weight");
    const std::int64_t F = get("decoder.layers.0.ffn.in.weight").shape[0];
    const std::string approximation = option(m.ffn, "approximation", "erf");
    const std::string act = m.ffn.name == "relu" ? "relu" : approximation == "tanh" ? "gelu_new" : "gelu";
    put("transformer.wte.weight", {V, D}, embedding.values);
    put("transformer.wpe.weight", positions.shape, positions.values);
    for (std::int64_t l = 0; l < L; ++l) {
      const std::string a = "decoder.layers." + std::to_string(l) + ".", b = "transformer.h." + std::to_string(l) + ".";
      put(b + "ln_1.weight", {D}, get(a + "norm0.gamma").values);
      put(b + "ln_1.bias", {D}, get(a + "norm0.beta").values);
      put(b + "attn.c_attn.weight", {D, 3 * D}, transposed(get(a + "self_attn.qkv.weight")));
      put(b + "attn.c_attn.bias", {3 * D}, bias_or_zeros(a + "self_attn.qkv.bias", 0, 3 * D));
      put(b + "attn.c_proj.weight", {D, D}, transposed(get(a + "self_attn.out.weight")));
      put(b + "attn.c_proj.bias", {D}, bias_or_zeros(a + "self_attn.out.bias", 0, D));
      put(b + "ln_2.weight", {D}, get(a + "norm1.gamma").values);
      put(b + "ln_2.bias", {D}, get(a + "norm1.beta").values);
      put(b + "mlp.c_fc.weight", {D, F}, transposed(get(a + "ffn.in.weight")));
      put(b + "mlp.c_fc.bias", {F}, get(a + "ffn.in.bias").values);
      put(b + "mlp.c_proj.weight", {F, D}, transposed(get(a + "ffn.out.weight")));
      put(b + "mlp.c_proj.bias", {D}, get(a + "ffn.out.bias").values);
    }
    put("transformer.ln_f.weight", {D}, get("decoder.final_norm.gamma").values);
    put("transformer.ln_f.bias", {D}, get("decoder.final_norm.beta").values);
    config =
        "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n  \"vocab_size\": " + std::to_string(V) +
        ",\n  \"n_embd\": " + std::to_string(D) + ",\n  \"n_layer\": " + std::to_string(L) +
        ",\n  \"n_head\": " + std::to_string(H) + ",\n  \"n_inner\": " + std::to_string(F) +
        ",\n  \"n_positions\": " + std::to_string(positions.shape[0]) + ",\n  \"activation_function\": \"" + act +
        "\",\n  \"layer_norm_epsilon\": " + number_text(m.norm_eps) +
        ",\n  \"resid_pdrop\": 0.0,\n  \"embd_pdrop\": 0.0,\n  \"attn_pdrop\": 0.0,\n  \"tie_word_embeddings\": true";
  }
  config += ",\n  \"bos_token_id\": 1,\n  \"eos_token_id\": 2,\n  \"pad_token_id\": 0,\n  \"torch_dtype\": \"float32\"" +
            std::string(",\n  \"ablate_run_id\": ") + json_quote(run.run_id) +
            ",\n  \"ablate_checkpoint_step\": " + std::to_string(run.step) + "\n}\n";

  // Ablate's logits on the first eval examples (the decoder reads bos + tokens; padding follows
  // each example, so a causal model's logits at its own positions do not see it).
  const std::int64_t E = std::min<std::int64_t>(4, ex.size(Split::Eval));
  std::vector<std::int64_t> indices(static_cast<std::size_t>(E));
  std::iota(indices.begin(), indices.end(), 0);
  const std::vector<Example> examples = ex.examples(Split::Eval, indices);
  const HostBatch hb = make_batch(examples);
  Graph g(*ex.backend, static_cast<std::uint64_t>(ex.spec.train.seed), 0, /*training=*/false, /*grad=*/false);
  const std::vector<float> logits = host_floats(*ex.backend, ex.model->logits(g, ex.batch(hb)).value());  // [B, T, V]
  const std::int64_t T = hb.T;
  std::vector<std::int64_t> ids(hb.tgt_in.begin(), hb.tgt_in.end()), lengths(hb.tgt_lengths.begin(), hb.tgt_lengths.end());
  std::string id_bytes(ids.size() * 8, '\0'), length_bytes(lengths.size() * 8, '\0');
  std::memcpy(id_bytes.data(), ids.data(), id_bytes.size());
  std::memcpy(length_bytes.data(), lengths.data(), length_bytes.size());
  const std::vector<SafeTensor> check = {
      {"input_ids", "I64", {E, T}, id_bytes}, {"lengths", "I64", {E}, length_bytes}, f32_tensor("logits", {E, T, V}, logits)};

  // The run's SentencePiece model, as the run restored it from its folder: its ids are the run's
  // (pad 0, bos 1, eos 2, unk 3; the trainer's default pieces <s>, </s>), and LlamaTokenizer puts
  // bos first as the run's decoder input has it.
  const std::string sentencepiece =
      ex.spec.task_tokenizer.name == "sentencepiece" ? ex.tokenizers->tokenizer("text")->save() : std::string();

  // The folder appears whole or not at all: written under a temporary name beside it, renamed.
  fs::path target = fs::absolute(dir).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  const fs::path partial = target.parent_path() / ("." + target.filename().string() + ".partial-" + std::to_string(::getpid()));
  try {
    fs::create_directories(partial);
    write_file_atomically(partial / "model.safetensors", safetensors_bytes(out, {{"format", "pt"}}));
    write_file_atomically(partial / "config.json", config);
    write_file_atomically(partial / "ablate_logits.safetensors",
                          safetensors_bytes(check, {{"run_id", run.run_id}, {"checkpoint_step", std::to_string(run.step)}}));
    if (!sentencepiece.empty()) {
      write_file_atomically(partial / "tokenizer.model", sentencepiece);
      write_file_atomically(
          partial / "tokenizer_config.json",
          "{\n  \"tokenizer_class\": \"LlamaTokenizer\",\n  \"legacy\": true,\n  \"add_bos_token\": true,\n"
          "  \"add_eos_token\": false,\n  \"bos_token\": \"<s>\",\n  \"eos_token\": \"</s>\",\n"
          "  \"unk_token\": \"<unk>\",\n  \"pad_token\": \"<pad>\",\n  \"clean_up_tokenization_spaces\": false\n}\n");
    }
    fs::rename(partial, target);  // over an empty folder too
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(partial, ec);
    throw UsageError("ablate export: cannot write " + target.string() + ": " + e.code().message(), "check the path");
  } catch (...) {
    fs::remove_all(partial, ec);
    throw;
  }
  return {arch, dir, static_cast<std::int64_t>(out.size()), E, !sentencepiece.empty()};
}

}  // namespace ablate::train
