// Reading parallel TSV files (parallel_corpus.hpp).
#include "parallel_corpus.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>

#include "ablate/error.hpp"

namespace task_translation {
namespace {

bool blank(std::string_view line) { return line.find_first_not_of(" \t\v\f") == std::string_view::npos; }

}  // namespace

Corpus read_parallel_tsv(std::istream& in, const std::string& name, const CorpusOptions& o) {
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const ablate_text::Tokenizer src_tok(o.source), tgt_tok(o.target);
  const auto max_len = static_cast<std::size_t>(o.max_len);
  Corpus c;
  std::string_view rest(data);
  if (rest.substr(0, 3) == "\xEF\xBB\xBF") rest.remove_prefix(3);  // UTF-8 byte order mark
  while (!rest.empty()) {
    if (o.max_examples > 0 && static_cast<std::int64_t>(c.pairs.size()) >= o.max_examples) break;
    const std::size_t eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 1);
    const std::int64_t number = ++c.lines_read;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (blank(line)) continue;
    const std::string where = name + ":" + std::to_string(number);
    if (const std::size_t bad = ablate_text::find_invalid_utf8(line); bad != std::string_view::npos)
      throw ablate::Error(where + ": invalid UTF-8 at byte " + std::to_string(bad + 1) + " of the line; expected UTF-8 text",
                          "convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8)");
    const std::size_t tab = line.find('\t');
    if (tab == std::string_view::npos)
      throw ablate::Error(where + ": no tab; expected 'source<TAB>target' (further tab-separated columns are ignored)",
                          "separate the two sides of each line with a tab character");
    const std::string_view source = line.substr(0, tab);
    std::string_view target = line.substr(tab + 1);
    target = target.substr(0, target.find('\t'));
    TokenizedPair p{src_tok.tokenize(source), tgt_tok.tokenize(target), number};
    if (p.src.empty() || p.tgt.empty()) {
      ++c.dropped_empty;
      continue;
    }
    if (p.src.size() > max_len || p.tgt.size() > max_len) {
      if (o.long_examples == LongExamples::Filter) {
        ++c.dropped_long;
        continue;
      }
      ++c.truncated;
      if (p.src.size() > max_len) p.src.resize(max_len);
      if (p.tgt.size() > max_len) p.tgt.resize(max_len);
    }
    c.pairs.push_back(std::move(p));
  }
  return c;
}

Corpus read_parallel_tsv_file(const std::string& path, const CorpusOptions& options) {
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  if (!in || std::filesystem::is_directory(path, ec)) {
    const std::string cwd = std::filesystem::current_path(ec).string();
    throw ablate::Error("cannot read '" + path + "'; expected a TSV file of 'source<TAB>target' lines" +
                            (std::filesystem::path(path).is_relative() ? " (relative paths are relative to the current directory, " + cwd + ")" : ""),
                        "check the task's file option");
  }
  return read_parallel_tsv(in, path, options);
}

}  // namespace task_translation
