// Plugin positional_encoding/learned: absolute positions as a trained table [max_len, D]
// (BERT, GPT), whose rows offset .. offset+T-1 are added to the embeddings. Unlike the
// sinusoid it cannot represent a position >= max_len: such a sequence is an error.
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "ablate/components.hpp"
#include "ablate/constant_cache.hpp"
#include "ablate/ops.hpp"

namespace positional_encoding_learned {

class Learned final : public ablate::PositionalEncoding {
 public:
  explicit Learned(const ablate::Options& o) : max_len_(o.get_int("max_len")) {
    if (max_len_ <= 0)
      throw ablate::Error("positional_encoding/learned: max_len must be > 0, got " + std::to_string(max_len_),
                          "set max_len to the longest sequence the model will see (BERT: 512)");
  }

  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims) override {
    if (dims.d_model <= 0)
      throw ablate::Error("positional_encoding/learned in '" + scope.prefix() + "': d_model must be > 0, got " +
                          std::to_string(dims.d_model));
    table_ = &scope.param("weight", {max_len_, dims.d_model}, ablate::Init::normal(0.02f));  // [max_len, D]
  }

  void capabilities(ablate::PositionCapabilities& caps) const override { caps.max_positions = max_len_; }

  // x: [B, T, D] -> x + table[offset .. offset+T-1] (the [T, D] rows repeat over the batch).
  ablate::Var forward(ablate::Graph& g, const ablate::Var& x, std::int64_t offset) const override {
    if (!table_) throw ablate::Error("positional_encoding/learned: forward before build", "call build(scope, dims) once first");
    const ablate::Shape& s = x.shape();
    const std::int64_t d = table_->value.shape()[1];
    if (s.rank() != 3 || s[2] != d)
      throw ablate::Error("positional_encoding/learned (" + table_->name + "): expects x [B, T, " + std::to_string(d) +
                              "], got " + x.value().str(),
                          "the embeddings' width must equal model.d_model");
    const std::int64_t t = s[1];
    if (offset < 0 || offset + t > max_len_)
      throw ablate::Error("positional_encoding/learned (" + table_->name + "): position " + std::to_string(offset + t - 1) +
                              " is past max_len " + std::to_string(max_len_) + " (positions " + std::to_string(offset) + ".." +
                              std::to_string(offset + t - 1) + " requested; the table has rows 0.." +
                              std::to_string(max_len_ - 1) + ")",
                          "raise the option max_len of positional_encoding/learned to at least " + std::to_string(offset + t) +
                              ", or use positional_encoding/sinusoidal, which has no length limit");
    const ablate::Var pe = ablate::ops::embedding(g, positions(g.backend(), offset, t), g.parameter(*table_));  // [T, D]
    return ablate::ops::add(g, x, pe);
  }

 private:
  // The ids offset .. offset+T-1 as an I32 [T] tensor on `be`, uploaded once per (backend,
  // offset, T) and kept (training reuses one length; decoding one id per step).
  ablate::Tensor positions(ablate::Backend& be, std::int64_t offset, std::int64_t t) const {
    return cache_.get(Key{&be, offset, t}, [&] {
      std::vector<std::int32_t> ids(static_cast<std::size_t>(t));
      std::iota(ids.begin(), ids.end(), static_cast<std::int32_t>(offset));
      ablate::Tensor out = be.empty({t}, ablate::DType::I32);
      be.copy_from_host(out, ids.data());
      return out;
    });
  }

  using Key = std::tuple<const ablate::Backend*, std::int64_t, std::int64_t>;
  std::int64_t max_len_;
  ablate::Parameter* table_ = nullptr;
  ablate::ConstantCache<Key> cache_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"max_len", ablate::OptionType::Int, "512", nullptr, "positions in the table (rows); a longer sequence is an error"},
};

ablate::Component* create(const ablate::Options& o) { return new Learned(o); }

ABLATE_PLUGIN("positional_encoding", "learned", "1.0.0",
              "trained absolute position table [max_len, D] added to the embeddings (BERT, GPT)", ablate::options_of(kOptions),
              create)

}  // namespace positional_encoding_learned
