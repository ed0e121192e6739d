// Plugin tokenizer/sentencepiece: subword units (BPE or unigram) learnt from the training text by
// the SentencePiece library (Kudo & Richardson 2018), as Marian and most MT and LM papers use.
// Ablate's reserved ids are SentencePiece's own: <pad> 0, <bos> 1, <eos> 2, <unk> 3, and the line
// break is piece 4, so a saved model gives the same ids in Python's sentencepiece. Subword
// sampling (alpha, nbest) segments training examples at random, keyed by the host's draw.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>
#include <string>
#include <unordered_map>
#include <vector>

#include "ablate/error.hpp"
#include "ablate/plugin.hpp"
#include "ablate/tokenizer.hpp"
#include "text/tokenizer.hpp"

namespace tokenizer_sentencepiece {
namespace {

constexpr ablate::OptionInfo kOptions[] = {
    {"vocab_size", ablate::OptionType::Int, "8000", nullptr,
     "pieces in the vocabulary, the 4 reserved ids and the line break included"},
    {"model_type", ablate::OptionType::String, "bpe", "bpe|unigram",
     "bpe (byte-pair merges, Sennrich et al. 2016) or unigram (a unigram language model, Kudo 2018)"},
    {"character_coverage", ablate::OptionType::Float, "0.9995", nullptr,
     "share of the training text's characters the pieces cover (1.0 for small alphabets; rarer characters are <unk> "
     "or bytes)"},
    {"byte_fallback", ablate::OptionType::Bool, "false", nullptr,
     "spell a character the pieces lack as its UTF-8 bytes (256 byte pieces) instead of <unk>"},
    {"normalization", ablate::OptionType::String, "nmt_nfkc", "nmt_nfkc|nfkc|nmt_nfkc_cf|nfkc_cf|identity",
     "Unicode normalisation before splitting (the _cf rules also case-fold); identity keeps the text as written"},
    {"threads", ablate::OptionType::Int, "1", nullptr, "training threads (the model does not depend on them for bpe)"},
    {"alpha", ablate::OptionType::Float, "0", nullptr,
     "subword sampling of training examples (never of evaluation), in (0, 1]: bpe drops each merge with this "
     "probability (BPE-dropout, Provilkov et al. 2020); unigram samples a segmentation with probabilities "
     "p^alpha (Kudo 2018). 0 = none"},
    {"nbest", ablate::OptionType::Int, "-1", nullptr,
     "unigram sampling: from the nbest best segmentations (>= 2), or -1 from all of them (the whole lattice)"},
};

constexpr std::int64_t kMaxVocab = std::int64_t{1} << 20;
constexpr std::int32_t kLineBreak = 4;  // the piece "\n" (user_defined_symbols)

[[noreturn]] void fail(const std::string& what, const std::string& hint) {
  throw ablate::Error("tokenizer/sentencepiece: " + what, hint);
}

// The training texts as SentencePiece's sentences: their lines, blank ones skipped.
class Lines final : public sentencepiece::SentenceIterator {
 public:
  explicit Lines(const std::vector<std::string>& texts) : texts_(texts) { advance(); }
  bool done() const override { return text_ >= texts_.size(); }
  void Next() override { advance(); }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  void advance() {
    while (text_ < texts_.size()) {
      const std::string& t = texts_[text_];
      if (pos_ > t.size()) {
        ++text_;
        pos_ = 0;
        continue;
      }
      const std::size_t end = std::min(t.find('\n', pos_), t.size());
      line_.assign(t, pos_, end - pos_);
      pos_ = end + 1;
      if (line_.find_first_not_of(" \t\r") != std::string::npos) return;
    }
  }
  const std::vector<std::string>& texts_;
  std::size_t text_ = 0, pos_ = 0;
  std::string line_;
};

class SentencePieceTokenizer final : public ablate::Tokenizer {
 public:
  explicit SentencePieceTokenizer(const ablate::Options& o)
      : vocab_size_(o.get_int("vocab_size")),
        model_type_(o.get_string("model_type")),
        coverage_(o.get_float("character_coverage")),
        byte_fallback_(o.get_bool("byte_fallback")),
        normalization_(o.get_string("normalization")),
        threads_(o.get_int("threads")),
        alpha_(o.get_float("alpha")),
        nbest_(o.get_int("nbest")) {
    if (vocab_size_ < 8 || vocab_size_ > kMaxVocab)
      fail("vocab_size must be in [8, " + std::to_string(kMaxVocab) + "], got " + std::to_string(vocab_size_),
           "papers use 8000 to 37000 for MT and LM; the text must hold enough distinct pieces");
    if (!(coverage_ > 0.0 && coverage_ <= 1.0))
      fail("character_coverage must be in (0, 1], got " + std::to_string(coverage_),
           "0.9995 suits most alphabets, 1.0 small ones");
    if (threads_ < 1) fail("threads must be >= 1, got " + std::to_string(threads_), "1 trains on one core");
    if (!(alpha_ >= 0.0 && alpha_ <= 1.0))
      fail("alpha must be in (0, 1] (0: no sampling), got " + std::to_string(alpha_),
           "Provilkov et al. drop BPE merges with 0.1; Kudo samples unigram segmentations with 0.1 to 0.5");
    if (model_type_ == "bpe" && nbest_ != -1)
      fail("nbest applies to unigram sampling, got " + std::to_string(nbest_) + " with model_type bpe",
           "BPE-dropout draws with alpha alone: remove nbest, or use model_type: unigram");
    if (nbest_ != -1 && nbest_ < 2)
      fail("nbest must be -1 (the whole lattice) or >= 2, got " + std::to_string(nbest_),
           "Kudo 2018 samples from the 64 best segmentations or from all of them");
  }

  void train(const std::vector<std::string>& texts) override {
    for (std::size_t i = 0; i < texts.size(); ++i)
      if (const std::size_t bad = ablate_text::find_invalid_utf8(texts[i]); bad != std::string::npos)
        fail("training text " + std::to_string(i + 1) + " is not valid UTF-8 (at byte " + std::to_string(bad + 1) + ")",
             "convert the corpus to UTF-8");
    const std::unordered_map<std::string, std::string> args = {
        {"model_type", model_type_},
        {"vocab_size", std::to_string(vocab_size_)},
        {"character_coverage", std::to_string(coverage_)},
        {"byte_fallback", byte_fallback_ ? "true" : "false"},
        {"normalization_rule_name", normalization_},
        {"num_threads", std::to_string(threads_)},
        {"pad_id", "0"},
        {"bos_id", "1"},
        {"eos_id", "2"},
        {"unk_id", "3"},
        {"unk_surface", "<unk>"},
        {"user_defined_symbols", "\n"},  // piece 4: a line break stays a token of its own
        {"minloglevel", "2"},
    };
    Lines lines(texts);
    if (lines.done()) fail("no training text (every line is blank)", "the train split must hold text");
    std::string model;
    const auto status = sentencepiece::SentencePieceTrainer::Train(args, &lines, &model);
    if (!status.ok())
      fail("training failed: " + status.ToString(),
           "a vocab_size above what the text supports is the usual cause: lower it to the value named, or train on more text");
    load(model);
  }

  std::string save() const override { return model_; }

  void load(const std::string& bytes) override {
    auto p = std::make_unique<sentencepiece::SentencePieceProcessor>();
    if (!p->LoadFromSerializedProto(bytes).ok())
      fail("not a SentencePiece model", "the tokenizer file is damaged; train the tokenizer again");
    if (p->pad_id() != 0 || p->bos_id() != 1 || p->eos_id() != 2 || p->unk_id() != 3 || p->GetPieceSize() < 5 ||
        p->IdToPiece(4) != "\n")
      fail("a SentencePiece model with other reserved ids (Ablate's are <pad> 0, <bos> 1, <eos> 2, <unk> 3, line break 4)",
           "let Ablate train the model (task.tokenizer) so its ids are the framework's");
    processor_ = std::move(p);
    model_ = bytes;
  }

  std::int64_t vocab_size() const override { return trained().GetPieceSize(); }

  std::vector<std::int32_t> encode(std::string_view text, std::int64_t* unknown) const override {
    std::vector<int> ids;
    if (const auto status = trained().Encode(text, &ids); !status.ok())
      fail("cannot encode: " + status.ToString(), "pass UTF-8 text");
    if (unknown) *unknown = std::count(ids.begin(), ids.end(), kUnk);
    return {ids.begin(), ids.end()};
  }

  bool samples() const override { return alpha_ > 0.0; }

  // SentencePiece's own sampler (BPE-dropout; unigram n-best or lattice sampling) draws from a
  // generator each thread seeds once, on first use, from SetRandomGeneratorSeed. A fresh thread
  // per call, started under a lock with the seed set from `key`, makes the draw a function of
  // (text, key): the same segmentation on every machine and in a resumed run.
  std::vector<std::int32_t> encode_sampled(std::string_view text, std::uint64_t key) const override {
    if (!samples()) return encode(text, nullptr);
    const sentencepiece::SentencePieceProcessor& p = trained();
    // 32 bits of the key, mixed (splitmix64's finaliser); all ones is the library's "no seed".
    std::uint64_t z = key + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    const auto seed = std::min(static_cast<unsigned>((z ^ (z >> 31)) >> 32), 0xFFFFFFFEu);
    std::vector<int> ids;
    sentencepiece::util::Status status;
    {
      static std::mutex seeding;
      const std::lock_guard<std::mutex> lock(seeding);
      std::thread draw([&] {
        sentencepiece::SetRandomGeneratorSeed(seed);
        status = p.SampleEncode(text, static_cast<int>(nbest_), static_cast<float>(alpha_), &ids);
      });
      draw.join();
    }
    if (!status.ok()) fail("cannot sample a segmentation: " + status.ToString(), "pass UTF-8 text");
    return {ids.begin(), ids.end()};
  }

  // Line by line (pieces between line breaks), so no line but the first starts with the space
  // SentencePiece's word boundary marker stands for.
  std::string decode(const std::vector<std::int32_t>& ids) const override {
    const int n = trained().GetPieceSize();
    std::string out, line;
    std::vector<int> piece_ids;
    const auto flush = [&] {
      if (const auto status = trained().Decode(piece_ids, &line); !status.ok()) fail("cannot decode: " + status.ToString(), "");
      out += line;
      piece_ids.clear();
    };
    for (std::int32_t id : ids) {
      if (id == kLineBreak) {
        flush();
        out += '\n';
      } else if (id > 2) {
        piece_ids.push_back(id < n ? id : kUnk);
      }
    }
    flush();
    return out;
  }

 private:
  const sentencepiece::SentencePieceProcessor& trained() const {
    if (!processor_) fail("used before train() or load()", "the host trains or restores a tokenizer before a task uses it");
    return *processor_;
  }

  std::int64_t vocab_size_;
  std::string model_type_;
  double coverage_;
  bool byte_fallback_;
  std::string normalization_;
  std::int64_t threads_;
  double alpha_;
  std::int64_t nbest_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
  std::string model_;  // the serialized model (what save() returns)
};

ablate::Component* create(const ablate::Options& o) { return new SentencePieceTokenizer(o); }

}  // namespace

ABLATE_PLUGIN("tokenizer", "sentencepiece", "1.1.0",
              "Subword units (BPE or unigram) learnt from the training text by SentencePiece", ablate::options_of(kOptions),
              create)

}  // namespace tokenizer_sentencepiece
