// Reading parallel TSV files (parallel_corpus.hpp).
#include "parallel_corpus.hpp"

#include <string_view>

#include "ablate/error.hpp"
#include "text/text_file.hpp"

namespace task_translation {
namespace {

bool blank(std::string_view line) { return line.find_first_not_of(" \t\v\f") == std::string_view::npos; }

}  // namespace

Corpus read_parallel_tsv(std::istream& in, const std::string& name, const CorpusOptions& o) {
  const ablate_text::Tokenizer src_tok(o.source), tgt_tok(o.target);
  Corpus c;
  ablate_text::TextLines lines(in);
  for (std::string_view line;
       (o.max_examples == 0 || static_cast<std::int64_t>(c.pairs.size()) < o.max_examples) && lines.next(line);) {
    const std::int64_t number = c.lines_read = lines.number();
    if (blank(line)) continue;
    const std::string where = name + ":" + std::to_string(number);
    ablate_text::check_line(line, name, number, ablate_text::kMaxExampleLineBytes);
    const std::size_t tab = line.find('\t');
    if (tab == std::string_view::npos)
      throw ablate::Error(where + ": no tab; expected 'source<TAB>target' (further tab-separated columns are ignored)",
                          "separate the two sides of each line with a tab character");
    const std::string_view source = line.substr(0, tab);
    std::string_view target = line.substr(tab + 1);
    target = target.substr(0, target.find('\t'));
    if (!o.tokenize) {
      if (blank(source) || blank(target)) {
        ++c.dropped_empty;
        continue;
      }
      c.pairs.push_back(TokenizedPair{{}, {}, number, std::string(target), std::string(source)});
      continue;
    }
    TokenizedPair p{src_tok.tokenize(source), tgt_tok.tokenize(target), number, std::string(target), std::string(source)};
    if (p.src.empty() || p.tgt.empty()) {
      ++c.dropped_empty;
      continue;
    }
    if (!ablate_text::fit_max_len(o.max_len, o.long_examples, c.dropped_long, c.truncated, p.src, p.tgt)) continue;
    c.pairs.push_back(std::move(p));
  }
  return c;
}

Corpus read_parallel_tsv_file(const std::string& path, const CorpusOptions& options) {
  std::ifstream in = ablate_text::open_text_file(path, "a TSV file of 'source<TAB>target' lines");
  return read_parallel_tsv(in, path, options);
}

}  // namespace task_translation
