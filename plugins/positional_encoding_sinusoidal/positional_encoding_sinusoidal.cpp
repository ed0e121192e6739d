// Plugin positional_encoding/sinusoidal: the fixed encoding of "Attention Is All You Need"
// (section 3.5), PE[pos, 2i] = sin(pos / base^(2i/D)), PE[pos, 2i+1] = cos(pos / base^(2i/D)),
// added to the embeddings. No parameters and no length limit: rows are computed for the
// positions asked for, so it extrapolates past the training length (a claim to ablate).
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "ablate/components.hpp"
#include "ablate/constant_cache.hpp"
#include "ablate/ops.hpp"

namespace positional_encoding_sinusoidal {

class Sinusoidal final : public ablate::PositionalEncoding {
 public:
  explicit Sinusoidal(const ablate::Options& o) : base_(o.get_float("base")) {
    if (!(base_ > 1.0))
      throw ablate::Error("positional_encoding/sinusoidal: base must be > 1, got " + std::to_string(base_),
                          "the paper uses base 10000");
  }

  void build(const ablate::ParamScope& scope, const ablate::ModelDims& dims) override {
    if (dims.d_model <= 0)
      throw ablate::Error("positional_encoding/sinusoidal in '" + scope.prefix() + "': d_model must be > 0, got " +
                          std::to_string(dims.d_model));
    d_model_ = dims.d_model;
  }

  // x: [B, T, D] -> x + PE[offset .. offset+T-1] (the [T, D] table repeats over the batch).
  ablate::Var forward(ablate::Graph& g, const ablate::Var& x, std::int64_t offset) const override {
    const ablate::Shape& s = x.shape();
    if (s.rank() != 3 || s[2] != d_model_)
      throw ablate::Error(
          "positional_encoding/sinusoidal: expects x [B, T, " + std::to_string(d_model_) + "], got " + x.value().str(),
          "the embeddings' width must equal model.d_model (build before forward)");
    if (offset < 0) throw ablate::Error("positional_encoding/sinusoidal: negative offset " + std::to_string(offset));
    return ablate::ops::add(g, x, g.constant(table(g.backend(), x.dtype(), offset, s[1]), "sinusoidal_pe"));
  }

 private:
  // PE rows offset .. offset+T-1 as a [T, D] tensor of `dtype` on `be`, uploaded once per
  // (backend, dtype, offset, T) and kept (training reuses one length; decoding one row per step).
  ablate::Tensor table(ablate::Backend& be, ablate::DType dtype, std::int64_t offset, std::int64_t t) const {
    return cache_.get(Key{&be, dtype, offset, t}, [&] { return make_table(be, dtype, offset, t); });
  }
  ablate::Tensor make_table(ablate::Backend& be, ablate::DType dtype, std::int64_t offset, std::int64_t t) const {
    std::vector<float> host(static_cast<std::size_t>(t * d_model_));
    for (std::int64_t p = 0; p < t; ++p)
      for (std::int64_t j = 0; j < d_model_; ++j) {
        const double pos = static_cast<double>(offset + p);
        const double angle = pos / std::pow(base_, static_cast<double>(j - j % 2) / static_cast<double>(d_model_));
        host[static_cast<std::size_t>(p * d_model_ + j)] = static_cast<float>(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
      }
    ablate::Tensor f32 = be.empty({t, d_model_}, ablate::DType::F32);
    be.copy_from_host(f32, host.data());
    ablate::Tensor out = f32;
    if (dtype != ablate::DType::F32) {  // BF16 activations under mixed precision
      out = be.empty({t, d_model_}, dtype);
      be.cast(out, f32);
    }
    return out;
  }

  using Key = std::tuple<const ablate::Backend*, ablate::DType, std::int64_t, std::int64_t>;
  double base_;
  std::int64_t d_model_ = 0;
  ablate::ConstantCache<Key> cache_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"base", ablate::OptionType::Float, "10000", nullptr,
     "wavelength base: dimension pair i has wavelength 2*pi*base^(2i/D) positions"},
};

ablate::Component* create(const ablate::Options& o) { return new Sinusoidal(o); }

ABLATE_PLUGIN("positional_encoding", "sinusoidal", "1.0.0",
              "fixed sin/cos positions added to the embeddings, any length (Vaswani et al. 2017)", ablate::options_of(kOptions),
              create)

}  // namespace positional_encoding_sinusoidal
