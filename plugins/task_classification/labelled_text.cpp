// Reading labelled TSV files for task/classification (labelled_text.hpp).
#include "labelled_text.hpp"

#include <algorithm>
#include <string_view>

#include "ablate/error.hpp"
#include "text/text_file.hpp"

namespace task_classification {
namespace {

constexpr std::string_view kBlank = " \t\v\f";

bool blank(std::string_view line) { return line.find_first_not_of(kBlank) == std::string_view::npos; }

std::string_view trim(std::string_view s) {
  const std::size_t first = s.find_first_not_of(kBlank);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kBlank) - first + 1);
}

std::vector<std::string_view> columns(std::string_view line) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0;;) {
    const std::size_t tab = line.find('\t', start);
    out.push_back(line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start));
    if (tab == std::string_view::npos) return out;
    start = tab + 1;
  }
}

// "'text<TAB>label'" for the default columns, else the columns spelled out.
std::string layout(const ReadOptions& o) {
  if (o.text_column == 1 && o.label_column == 2) return "'text<TAB>label' (further tab-separated columns are ignored)";
  return "the text in column " + std::to_string(o.text_column) + " and the label in column " + std::to_string(o.label_column) +
         " (tab-separated, counted from 1)";
}

}  // namespace

LabelledCorpus read_labelled_tsv(std::istream& in, const std::string& name, const ReadOptions& o) {
  const ablate_text::Tokenizer tokenizer(o.tokens);
  const auto needed = static_cast<std::size_t>(std::max(o.text_column, o.label_column));
  LabelledCorpus c;
  ablate_text::TextLines lines(in);
  for (std::string_view line;
       (o.max_examples == 0 || static_cast<std::int64_t>(c.examples.size()) < o.max_examples) && lines.next(line);) {
    const std::int64_t number = c.lines_read = lines.number();
    if (o.header && number == 1) continue;
    if (blank(line)) continue;
    const std::string where = name + ":" + std::to_string(number);
    ablate_text::check_line(line, name, number, ablate_text::kMaxExampleLineBytes);
    const std::vector<std::string_view> cols = columns(line);
    if (cols.size() < needed)
      throw ablate::Error(where + ": " + (cols.size() == 1 ? std::string("no tab") : std::to_string(cols.size()) + " columns") +
                              "; expected " + layout(o),
                          "separate the text and the label of each line with a tab character");
    const std::string_view label = trim(cols[static_cast<std::size_t>(o.label_column - 1)]);
    if (label.empty())
      throw ablate::Error(where + ": empty label; expected " + layout(o), "give every line a label, or delete the line");
    const std::string_view text = cols[static_cast<std::size_t>(o.text_column - 1)];
    if (!o.tokenize) {
      if (blank(text))
        throw ablate::Error(where + ": empty text; expected " + layout(o), "give every line a text, or delete the line");
      c.examples.push_back(LabelledText{{}, std::string(label), number, std::string(text)});
      continue;
    }
    LabelledText e{tokenizer.tokenize(text), std::string(label), number, {}};
    if (e.tokens.empty())
      throw ablate::Error(where + ": empty text; expected " + layout(o), "give every line a text, or delete the line");
    if (!ablate_text::fit_max_len(o.max_len, o.long_examples, c.dropped_long, c.truncated, e.tokens)) continue;
    c.examples.push_back(std::move(e));
  }
  return c;
}

LabelledCorpus read_labelled_tsv_file(const std::string& path, const ReadOptions& options) {
  std::ifstream in = ablate_text::open_text_file(path, "a TSV file of " + layout(options) + " lines");
  return read_labelled_tsv(in, path, options);
}

}  // namespace task_classification
