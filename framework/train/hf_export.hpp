// `ablate export RUN --format hf`: a decoder-only run as a Hugging Face transformers model folder
// (config.json + model.safetensors) that `AutoModelForCausalLM.from_pretrained(DIR)` loads, for
// the component choices that are exactly a Llama or a GPT-2; anything else is refused by name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "spec/experiment_spec.hpp"
#include "train/run_eval.hpp"

namespace ablate::train {

// "llama" (pre-norm RMSNorm, rotary on every head dim, SwiGLU, multi-head or grouped k/v heads)
// or "gpt2" (pre-norm LayerNorm, learned positions, ReLU or GELU FFN, multi-head), both causal
// decoders with a final norm, unscaled embeddings and tied output. Throws UsageError naming the
// first key whose value has no counterpart in either, and what would map.
std::string hf_architecture(const spec::ExperimentSpec& spec);

struct HfExportResult {
  std::string architecture;  // "llama" | "gpt2"
  std::filesystem::path dir;
  std::int64_t tensors = 0;
  std::int64_t check_examples = 0;  // rows of ablate_logits.safetensors
  bool tokenizer = false;           // tokenizer.model written
};

// Writes into `dir` (created; refused when it exists and is not empty): config.json,
// model.safetensors (the weights under transformers' names, q/k/v split, GPT-2's Conv1D weights
// transposed, absent biases as zeros) and ablate_logits.safetensors: the first eval examples'
// decoder input ids [B, T] (I64, bos first, padded with 0 after `lengths` [B]) and Ablate's logits
// for them [B, T, V] (F32), so that a loaded model can be checked against the run. Where the run
// read text through a SentencePiece tokenizer (task.tokenizer), also its model as tokenizer.model
// with a tokenizer_config.json for transformers' LlamaTokenizer: the same ids. The folder is
// written under a temporary name beside `dir` and renamed: it appears whole or not at all.
HfExportResult export_hf(TrainedRun& run, const std::filesystem::path& dir);

}  // namespace ablate::train
