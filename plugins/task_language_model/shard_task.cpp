// task/language_model's shard mode (shard_task.hpp): shards opened, splits laid out as stretches
// of whole windows, windows read on demand and checked against the vocabulary.
#include "shard_task.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "ablate/error.hpp"
#include "plugin_name.hpp"
#include "text/per_split.hpp"
#include "text/splits.hpp"

namespace task_language_model {

namespace fs = std::filesystem;
using ablate::Split;

namespace {

// The first `windows` windows of `from` (whole stretches, the last one cut), removed from it.
std::vector<ShardLanguageModel::Stretch> take_front(std::vector<ShardLanguageModel::Stretch>& from, std::int64_t windows,
                                                    std::int64_t context) {
  std::vector<ShardLanguageModel::Stretch> taken;
  std::int64_t want = windows * context;
  std::size_t i = 0;
  for (; i < from.size() && want > 0; ++i) {
    ShardLanguageModel::Stretch& s = from[i];
    const std::int64_t n = std::min(want, s.tokens);
    taken.push_back({s.shard, s.first, n});
    want -= n;
    if (n < s.tokens) {  // the rest of this stretch stays
      s.first += n;
      s.tokens -= n;
      break;
    }
  }
  from.erase(from.begin(), from.begin() + static_cast<std::ptrdiff_t>(i));
  return taken;
}

}  // namespace

ShardLanguageModel::ShardLanguageModel(const ShardSettings& s) : settings_(s) {
  const std::int64_t context = s.context;
  if (context < 1) fail("context must be >= 1, got " + std::to_string(context), "it is the tokens per example (window)");
  vocab_size_ = s.tokenizer ? s.tokenizer->vocab_size() : s.shard_vocab_size + 3;

  // Every shard of a pattern, opened (header checked), as stretches of its whole windows.
  std::vector<fs::path> opened;
  const auto open = [&](const std::string& pattern, const std::string& option) {
    std::vector<Stretch> out;
    const std::vector<fs::path> files = ablate::shard_glob(pattern, std::string(kName) + ": " + option);
    for (const fs::path& f : files) {
      for (const fs::path& seen : opened) {
        std::error_code ec;
        if (fs::equivalent(seen, f, ec))
          fail(f.string() + " is matched by two of shards / eval_shards / test_shards",
               "a held-out shard must not be a training shard: make the patterns disjoint");
      }
      opened.push_back(f);
      try {
        readers_.push_back(std::make_unique<ablate::ShardReader>(f));
      } catch (const ablate::Error& e) {
        fail(e.what(), e.hint());
      }
      const std::int64_t whole = readers_.back()->tokens() / context * context;
      if (whole > 0) out.push_back({readers_.size() - 1, 0, whole});
    }
    std::int64_t tokens = 0;
    for (const Stretch& st : out) tokens += st.tokens;
    if (tokens == 0)
      fail(option + " '" + pattern + "': its " + std::to_string(files.size()) + " shard(s) hold no whole window of context " +
               std::to_string(context),
           "lower context, or give longer shards");
    return out;
  };
  std::vector<Stretch> train = open(s.shards, "shards");
  std::int64_t windows = 0;
  for (const Stretch& st : train) windows += st.tokens / context;
  ablate_text::SplitCounts counts;
  try {
    counts = ablate_text::split_counts(windows, s.eval_shards.empty() ? s.valid_fraction : 0.0,
                                       s.test_shards.empty() ? s.test_fraction : 0.0);
  } catch (const ablate::Error& e) {
    fail(s.shards + " cut into windows of " + std::to_string(context) + " tokens: " + e.what(),
         "lower valid_fraction / test_fraction or context, give held-out shards (eval_shards, test_shards), or more shards");
  }
  // Contiguous: train | eval | test along the training shards, the held-out parts at their end.
  parts_[Split::Train].stretches = take_front(train, counts.train, context);
  if (!s.eval_shards.empty())
    parts_[Split::Eval].stretches = open(s.eval_shards, "eval_shards");
  else if (counts.eval == 0)
    parts_[Split::Eval] = parts_[Split::Train];  // valid_fraction 0: evaluate on the train windows
  else
    parts_[Split::Eval].stretches = take_front(train, counts.eval, context);
  if (!s.test_shards.empty())
    parts_[Split::Test].stretches = open(s.test_shards, "test_shards");
  else
    parts_[Split::Test].stretches = take_front(train, counts.test, context);
  for (auto& [split, p] : parts_) {
    p.starts.clear();
    p.tokens = 0;
    for (const Stretch& st : p.stretches) {
      p.starts.push_back(p.tokens);
      p.tokens += st.tokens;
    }
  }
}

const ShardLanguageModel::Part& ShardLanguageModel::part(Split split) const { return parts_.at(split); }

const std::vector<ShardLanguageModel::Stretch>& ShardLanguageModel::stretches(Split split) const { return part(split).stretches; }

ablate::TaskInfo ShardLanguageModel::info() const { return {ablate::TaskType::LanguageModel, vocab_size_, 0, settings_.context}; }

std::int64_t ShardLanguageModel::size(Split split) const { return part(split).tokens / settings_.context; }

std::vector<std::int32_t> ShardLanguageModel::tokens_at(Split split, std::int64_t offset, std::int64_t count) const {
  const Part& p = part(split);
  std::vector<std::int32_t> out(static_cast<std::size_t>(count));
  std::size_t i = static_cast<std::size_t>(std::upper_bound(p.starts.begin(), p.starts.end(), offset) - p.starts.begin() - 1);
  for (std::int64_t done = 0; done < count; ++i) {
    const Stretch& st = p.stretches[i];
    const std::int64_t from = offset + done - p.starts[i], n = std::min(count - done, st.tokens - from);
    readers_[st.shard]->read(st.first + from, n, out.data() + done);
    const std::int32_t shift = settings_.tokenizer ? 0 : 3;
    for (std::int64_t k = done; k < done + n; ++k) {
      const std::int32_t raw = out[static_cast<std::size_t>(k)], id = raw + shift;
      if (id < (settings_.tokenizer ? ablate::Tokenizer::kUnk : 3) || id >= vocab_size_)
        fail(readers_[st.shard]->file().string() + ": token " + std::to_string(st.first + from + (k - done)) + " is id " +
                 std::to_string(raw) + ", outside the " +
                 (settings_.tokenizer ? "tokenizer's content ids 3 .. " + std::to_string(vocab_size_ - 1)
                                      : "shard_vocab_size of " + std::to_string(settings_.shard_vocab_size)),
             settings_.tokenizer ? "the shards were made with another tokenizer than tokenizer-text.bin beside them"
                                 : "set shard_vocab_size to the vocabulary the shards were made with (GPT-2: 50257)");
      out[static_cast<std::size_t>(k)] = id;
    }
    done += n;
  }
  return out;
}

ablate::Example ShardLanguageModel::example(Split split, std::int64_t index) const {
  const std::int64_t n = size(split);
  if (index < 0 || index >= n)
    fail("example index " + std::to_string(index) + " is outside the " + ablate_text::split_name(split) + " split's " +
         std::to_string(n) + " windows");
  ablate::Example e;
  e.tgt = tokens_at(split, index * settings_.context, settings_.context);
  e.cut = true;  // a window of the shards' stream
  return e;
}

std::int64_t ShardLanguageModel::size_at_length(Split split, std::int64_t length) const {
  return length < 1 ? 0 : part(split).tokens / length;
}

ablate::Example ShardLanguageModel::example_at_length(Split split, std::int64_t index, std::int64_t length) const {
  const std::int64_t n = size_at_length(split, length);
  if (index < 0 || index >= n)
    fail("example index " + std::to_string(index) + " at length " + std::to_string(length) + " is outside the " +
             ablate_text::split_name(split) + " split's " + std::to_string(n) + " windows of that length",
         "index with 0 .. size_at_length(split, length) - 1");
  ablate::Example e;
  e.tgt = tokens_at(split, index * length, length);
  e.cut = true;
  return e;
}

std::string ShardLanguageModel::text(const std::vector<std::int32_t>& tokens, bool /*target: one vocabulary*/) const {
  return settings_.tokenizer ? settings_.tokenizer->decode(tokens) : std::string();
}

std::vector<std::int32_t> ShardLanguageModel::encode(const std::string& text, bool target, std::int64_t* unknown) const {
  if (!settings_.tokenizer) return Task::encode(text, target, unknown);
  return settings_.tokenizer->encode(text, unknown);
}

std::vector<ablate::Example> ShardLanguageModel::read_examples(const std::string& file, ablate::ReadReport& /*report*/) const {
  fail("cannot read " + file + " as new examples: a shard-mode task reads token shards, not text files",
       "tokenize the text into a shard with `ablate tokenize --tokenizer-file RUN/tokenizer-text.bin`, and evaluate a spec "
       "whose eval_shards or test_shards names it");
}

}  // namespace task_language_model
