// Kind "tokenizer": how a text task (translation, language_model over a file, classification)
// turns text into token ids and back, chosen in the spec (`task.tokenizer: {plugin: NAME, ...}`).
// Built-ins: char, word (plugins/tokenizer_char, _word) and sentencepiece (BPE / unigram).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ablate/plugin.hpp"

namespace ablate {

// A tokenizer learns from the training text (train) or is restored from what it learned (load),
// then encodes and decodes. Ids: TaskInfo's reserved 0 <pad>, 1 <bos>, 2 <eos>, then 3 <unk>;
// content ids are 4 .. vocab_size()-1. A line break inside a text is a token of its own (a
// language model's stream keeps its lines apart), so decode(encode(text)) gives the text back up
// to the tokenizer's normalisation (lower-casing, spacing, <unk>).
class BOOST_SYMBOL_VISIBLE Tokenizer : public Component {
 public:
  static constexpr const char* kKind = "tokenizer";
  static constexpr std::int32_t kUnk = 3, kFirstContent = 4;

  // Learns from the texts of a training split (sentences, or a corpus' lines ending in '\n').
  // Called at most once, before any other call but load(); the host never passes eval or test
  // text. Throws ablate::Error when the texts cannot give what the options ask (a vocabulary
  // larger than the text supports, invalid UTF-8).
  virtual void train(const std::vector<std::string>& texts) = 0;
  // What train() learned, as bytes (a run keeps them beside run.h5), and back: load() restores a
  // tokenizer that encodes exactly as the one that was saved. Throws ablate::Error for bytes
  // this plugin did not write.
  virtual std::string save() const = 0;
  virtual void load(const std::string& bytes) = 0;
  // Ids including the 4 reserved ones.
  virtual std::int64_t vocab_size() const = 0;
  // Content ids of `text` (no <bos>/<eos>); `unknown` (when not null) receives how many became <unk>.
  virtual std::vector<std::int32_t> encode(std::string_view text, std::int64_t* unknown) const = 0;
  // Subword sampling (subword regularisation, for training text only): whether encode_sampled
  // draws a segmentation at random, as the plugin's options say. Default: false.
  virtual bool samples() const;
  // One segmentation of `text` drawn at random (BPE-dropout, unigram sampling), a function of
  // (text, key) alone: the same key gives the same ids on every machine and in a resumed run, so
  // the host's key makes the draw. It spells the same text as encode(text). Default: encode(text).
  virtual std::vector<std::int32_t> encode_sampled(std::string_view text, std::uint64_t key) const;
  // The text of content ids: reserved ids 0-2 are dropped, <unk> (and an id outside the
  // vocabulary) reads "<unk>".
  virtual std::string decode(const std::vector<std::int32_t>& ids) const = 0;
};

}  // namespace ablate
