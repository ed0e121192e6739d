// The token tables of the text tasks (vocabulary.hpp).
#include "vocabulary.hpp"

#include <algorithm>
#include <utility>

#include "ablate/error.hpp"

namespace ablate_text {
namespace {
const std::string kReserved[] = {"<pad>", "<bos>", "<eos>", "<unk>"};
}  // namespace

void Vocabulary::Builder::add(const std::vector<std::string>& tokens) {
  for (const std::string& t : tokens) ++counts_[t];
}

Vocabulary Vocabulary::Builder::build(std::int64_t min_freq) const {
  std::vector<std::pair<std::string_view, std::int64_t>> kept;
  for (const auto& [token, count] : counts_)
    if (count >= min_freq) kept.emplace_back(token, count);
  std::sort(kept.begin(), kept.end(),
            [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  Vocabulary v;
  v.tokens_.reserve(v.tokens_.size() + kept.size());
  v.ids_.reserve(v.tokens_.size() + kept.size());
  for (const auto& [token, count] : kept) {
    // Text spelled like a reserved token ("<unk>") is not added: id() maps it to <unk>.
    if (v.ids_.count(std::string(token))) continue;
    v.ids_.emplace(std::string(token), static_cast<std::int32_t>(v.tokens_.size()));
    v.tokens_.emplace_back(token);
  }
  return v;
}

Vocabulary::Vocabulary() {
  for (const std::string& t : kReserved) {
    ids_.emplace(t, static_cast<std::int32_t>(tokens_.size()));
    tokens_.push_back(t);
  }
}

Vocabulary Vocabulary::from_tokens(const std::vector<std::string>& content) {
  Vocabulary v;
  for (const std::string& t : content) {
    if (!v.ids_.emplace(t, static_cast<std::int32_t>(v.tokens_.size())).second)
      throw ablate::Error("a vocabulary lists the token '" + t + "' twice (or a reserved one)",
                          "the saved vocabulary is damaged; train the tokenizer again");
    v.tokens_.push_back(t);
  }
  return v;
}

std::int32_t Vocabulary::id(const std::string& token) const {
  // Text spelled like <pad>, <bos> or <eos> is content the table does not have: <unk>, never a control id.
  const auto it = ids_.find(token);
  return it == ids_.end() || it->second < kUnk ? kUnk : it->second;
}

const std::string& Vocabulary::token(std::int32_t id) const {
  return id < 0 || id >= size() ? tokens_[kUnk] : tokens_[static_cast<std::size_t>(id)];
}

std::vector<std::int32_t> Vocabulary::encode(const std::vector<std::string>& tokens) const {
  std::vector<std::int32_t> out;
  out.reserve(tokens.size());
  for (const std::string& t : tokens) out.push_back(id(t));
  return out;
}

std::vector<std::int32_t> Vocabulary::encode(const std::vector<std::string>& tokens, std::int64_t* unknown) const {
  std::vector<std::int32_t> out = encode(tokens);
  if (unknown) *unknown = std::count(out.begin(), out.end(), kUnk);
  return out;
}

std::vector<std::string> Vocabulary::decode(const std::vector<std::int32_t>& ids) const {
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (std::int32_t i : ids)
    if (i != kPad && i != kBos && i != kEos) out.push_back(token(i));
  return out;
}

}  // namespace ablate_text
