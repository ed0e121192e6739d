// Reading a parallel corpus for task/translation: a UTF-8 TSV file, one pair per line,
// `source<TAB>target[<TAB>anything]` (Tatoeba/ManyThings files such as eng-cmn.txt, with their
// third attribution column, work as they are), tokenized per side and filtered by length.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "text/corpus_settings.hpp"
#include "text/tokenizer.hpp"

namespace task_translation {

using ablate_text::LongExamples;

struct CorpusOptions {
  ablate_text::TokenizerOptions source, target;
  std::int64_t max_len = 20;                          // content tokens per side
  LongExamples long_examples = LongExamples::Filter;  // Filter: drop a pair with a side longer than max_len; Truncate: cut it
  std::int64_t max_examples = 0;                      // keep the first N pairs that survive filtering (file order); 0 = all
  // false: the sides are kept as text only (a tokenizer plugin encodes them later): no token lists,
  // no length rule; only pairs with a blank side are dropped.
  bool tokenize = true;
};

struct TokenizedPair {
  std::vector<std::string> src, tgt;
  std::int64_t line = 0;  // 1-based line of the file
  std::string target;     // the target column as written (what sacreBLEU and chrF score against; never truncated)
  std::string source;     // the source column as written
  bool operator==(const TokenizedPair&) const = default;
};

struct Corpus {
  std::vector<TokenizedPair> pairs;  // file order
  std::int64_t lines_read = 0;       // lines looked at (reading stops after max_examples pairs)
  std::int64_t dropped_empty = 0;    // pairs with a side that is empty after tokenization
  std::int64_t dropped_long = 0;     // pairs longer than max_len (filter)
  std::int64_t truncated = 0;        // pairs cut to max_len (truncate)
};

// Reads `in`; `name` (the file's path) prefixes errors: "NAME:LINE: expected ...". Blank lines are
// skipped, a trailing '\r' (CRLF files) and a leading UTF-8 byte order mark are ignored. Throws
// ablate::Error for a line without a tab or with invalid UTF-8.
Corpus read_parallel_tsv(std::istream& in, const std::string& name, const CorpusOptions& options);
// Opens `path` (relative to the current directory); throws ablate::Error if it cannot be read.
Corpus read_parallel_tsv_file(const std::string& path, const CorpusOptions& options);

}  // namespace task_translation
