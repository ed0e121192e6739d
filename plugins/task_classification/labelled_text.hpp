// Reading labelled text for task/classification: a UTF-8 TSV file, one example per line, the text
// in one column and its label in another (`text<TAB>label` by default; SST-2 style files with a
// header line work with `header: true`), tokenized (plugins/common/text) and filtered by length.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "text/corpus_settings.hpp"
#include "text/tokenizer.hpp"

namespace task_classification {

using ablate_text::LongExamples;

struct ReadOptions {
  ablate_text::TokenizerOptions tokens;
  std::int64_t text_column = 1, label_column = 2;     // 1-based tab-separated columns, different
  bool header = false;                                // the first line names the columns: skipped
  std::int64_t max_len = 64;                          // content tokens of a text
  LongExamples long_examples = LongExamples::Filter;  // Filter: drop a longer text; Truncate: cut it to max_len
  std::int64_t max_examples = 0;                      // keep the first N examples that survive filtering (file order); 0 = all
  // false: texts are kept as written only (a tokenizer plugin encodes them later): no tokens, no
  // length rule.
  bool tokenize = true;
};

struct LabelledText {
  std::vector<std::string> tokens;
  std::string label;      // as written, without surrounding whitespace
  std::int64_t line = 0;  // 1-based line of the file
  std::string text;       // the text column as written (ReadOptions::tokenize false only)
  bool operator==(const LabelledText&) const = default;
};

struct LabelledCorpus {
  std::vector<LabelledText> examples;  // file order
  std::int64_t lines_read = 0;         // lines looked at (reading stops after max_examples examples)
  std::int64_t dropped_long = 0;       // texts longer than max_len (filter)
  std::int64_t truncated = 0;          // texts cut to max_len (truncate)
};

// Reads `in`; `name` (the file's path) prefixes errors: "NAME:LINE: ...; expected ...". Blank
// lines are skipped, a trailing '\r' (CRLF files) and a leading UTF-8 byte order mark are ignored.
// Throws ablate::Error for a line with invalid UTF-8, too few columns, an empty label or a text
// with no tokens.
LabelledCorpus read_labelled_tsv(std::istream& in, const std::string& name, const ReadOptions& options);
// Opens `path` (relative to the current directory); throws ablate::Error if it cannot be read.
LabelledCorpus read_labelled_tsv_file(const std::string& path, const ReadOptions& options);

}  // namespace task_classification
