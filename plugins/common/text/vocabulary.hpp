// A token <-> id table for the text tasks (one per side of a parallel corpus). Ids 0..3 are
// reserved: <pad> 0, <bos> 1, <eos> 2 (the framework's TaskInfo ids) and <unk> 3; content tokens
// follow from 4, most frequent first, ties in byte-wise lexicographic order, so the table is a
// pure function of the counted text. Built from the train split only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ablate_text {

class Vocabulary {
 public:
  static constexpr std::int32_t kPad = 0, kBos = 1, kEos = 2, kUnk = 3, kFirstContent = 4;

  // Counts tokens; build() turns the counts into a vocabulary.
  class Builder {
   public:
    void add(const std::vector<std::string>& tokens);
    // Tokens counted at least min_freq times (min_freq >= 1).
    Vocabulary build(std::int64_t min_freq) const;

   private:
    std::unordered_map<std::string, std::int64_t> counts_;
  };

  Vocabulary();  // the reserved ids only
  // The reserved ids, then `content` in order (ids 4, 5, ...): a table saved as its tokens, restored.
  // Throws ablate::Error for a content token that repeats one before it or spells a reserved one.
  static Vocabulary from_tokens(const std::vector<std::string>& content);
  // Every token by id, the 4 reserved ones first.
  const std::vector<std::string>& tokens() const { return tokens_; }
  // Ids including the 4 reserved ones.
  std::int64_t size() const { return static_cast<std::int64_t>(tokens_.size()); }
  // kUnk for a token not in the table (and for text spelled "<pad>", "<bos>", "<eos>").
  std::int32_t id(const std::string& token) const;
  // "<pad>", "<bos>", "<eos>", "<unk>" for the reserved ids; "<unk>" for an id outside [0, size()).
  const std::string& token(std::int32_t id) const;
  std::vector<std::int32_t> encode(const std::vector<std::string>& tokens) const;
  // The same, counting into `unknown` (when not null) the tokens that became kUnk.
  std::vector<std::int32_t> encode(const std::vector<std::string>& tokens, std::int64_t* unknown) const;
  // The content tokens of `ids`: <pad>, <bos>, <eos> are dropped, <unk> (and any id outside
  // the table) is rendered "<unk>".
  std::vector<std::string> decode(const std::vector<std::int32_t>& ids) const;

 private:
  std::vector<std::string> tokens_;  // by id
  std::unordered_map<std::string, std::int32_t> ids_;
};

}  // namespace ablate_text
