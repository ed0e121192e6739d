// The plugin test kit (ablate/testing/kit.hpp): one process-wide plugin registry over the search
// path `ablate` uses, never destroyed (backends, tensors and components made from it may outlive a
// test), and the cache-equivalence check, which calls the attention the way the model does.
#include "core/testing_kit.hpp"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <optional>
#include <sstream>
#include <vector>

#include "ablate/testing/kit.hpp"
#include "plugin_host/plugin_call.hpp"

namespace ablate::testing {
namespace {

// Recursive: a component the kit is creating may call the kit itself (a backend that wraps
// another makes it with make_backend in its factory).
std::recursive_mutex& kit_mutex() {
  static std::recursive_mutex mutex;
  return mutex;
}

// Called inside a catch block: the error being handled, with `asked` in front and its hint (the
// available plugins or options, "did you mean") in the message too, since a test shows what() only.
// A fault of the plugin's own code goes on unchanged: it already names the plugin and the call.
[[noreturn]] void rethrow_for_test(const std::string& asked) {
  const auto text = [&](const Error& e) {
    return asked + ": " + e.what() + (e.hint().empty() ? std::string() : "; " + e.hint());
  };
  try {
    throw;
  } catch (const PluginFault&) {
    throw;
  } catch (const UsageError& e) {
    throw UsageError(text(e), e.hint());
  } catch (const PluginError& e) {
    throw PluginError(text(e), e.hint());
  }
}

std::string to_text(double v) {
  std::ostringstream s;
  s.precision(3);
  s << v;
  return s.str();
}

}  // namespace

PluginRegistry& kit_registry() {
  static PluginRegistry* registry = [] {
    auto* r = new PluginRegistry();  // never destroyed: what it made may outlive every test
    r->scan(plugin_search_path());
    return r;
  }();
  return *registry;
}

void load_plugins(const std::filesystem::path& path) {
  std::lock_guard<std::recursive_mutex> lock(kit_mutex());
  PluginRegistry& registry = kit_registry();
  const std::size_t known = registry.problems().size();
  registry.scan({path});  // a file loaded before is skipped (PluginRegistry::load)
  if (registry.problems().size() > known) {
    const PluginProblem& p = registry.problems()[known];
    throw PluginError("load_plugins(" + path.string() + "): " + p.message, p.hint);
  }
}

std::shared_ptr<Component> make_component(const std::string& kind, const std::string& name, const OptionOverrides& overrides) {
  std::lock_guard<std::recursive_mutex> lock(kit_mutex());
  try {
    return kit_registry().create(kind, name, overrides);
  } catch (...) {
    rethrow_for_test("make_component(" + kind + ", " + name + ")");
  }
}

std::shared_ptr<Task> make_task(const std::string& name, const OptionOverrides& overrides, const TaskContext& context) {
  std::shared_ptr<Task> task = make_component<Task>(name, overrides);
  try {
    plugin_call(*task, "prepare", [&] { task->prepare(context); });
  } catch (...) {
    rethrow_for_test("make_task(" + name + ")");
  }
  return task;
}

std::shared_ptr<Backend> make_backend(const std::string& name, const OptionOverrides& options) {
  return make_component<Backend>(name, options);
}

namespace {

// The cached pass against the full one, position by position: the result and its report (after
// `header`). full, cached: [B, T, D].
CacheCheckResult compare_cached(const std::vector<float>& full, const std::vector<float>& cached, const Shape& btd,
                                std::int64_t P, const CacheCheckOptions& o, const std::string& header) {
  const std::int64_t B = btd[0], T = btd[1], D = btd[2];
  CacheCheckResult r;
  std::ostringstream report;
  report << header;
  std::int64_t bad = 0;
  std::string first_bad;
  for (std::int64_t t = 0; t < T; ++t) {
    double worst = 0.0;
    std::int64_t bad_here = 0;
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t d = 0; d < D; ++d) {
        const auto i = static_cast<std::size_t>((b * T + t) * D + d);
        const double want = full[i], got = cached[i], err = std::abs(want - got);
        worst = std::max(worst, std::isnan(err) ? INFINITY : err);
        if (!(err <= o.atol + o.rtol * std::abs(want))) {
          ++bad_here;
          if (first_bad.empty())
            first_bad = "first at [b " + std::to_string(b) + ", t " + std::to_string(t) + ", d " + std::to_string(d) +
                        "]: full " + to_text(want) + ", cached " + to_text(got);
        }
      }
    bad += bad_here;
    r.max_abs_error = std::max(r.max_abs_error, worst);
    report << "  position " << t << (t < P ? " (prompt)" : " (step " + std::to_string(t - P + 1) + ")")
           << ": max |full - cached| " << to_text(worst) << (bad_here ? "  MISMATCH" : "") << "\n";
  }
  r.checked = B * T * D;
  r.ok = bad == 0;
  report << (r.ok ? "ok: " : "FAILED: " + std::to_string(bad) + " of ") << r.checked << " elements"
         << (r.ok ? " agree" : " differ beyond atol " + to_text(o.atol) + " + rtol " + to_text(o.rtol) + " |full|; " + first_bad)
         << "; max abs error " << to_text(r.max_abs_error) << "\n";
  if (!r.ok)
    report << "  (positions that act inside attention must use the absolute positions offset .. offset+T-1, and a "
              "logit bias the query offset and S keys of the cache)\n";
  r.report = report.str();
  return r;
}

}  // namespace

CacheCheckResult cache_equivalence(Backend& be, Attention& attention, PositionalEncoding* positions, const ModelDims& dims,
                                   const CacheCheckOptions& o) {
  const std::int64_t B = o.batch, T = o.length, D = dims.d_model, P = o.prompt;
  const std::int64_t capacity = T + o.extra_capacity;
  if (B < 1 || T < 1 || P < 1 || P > T || o.extra_capacity < 0 || D < 1)
    throw Error("cache_equivalence: batch " + std::to_string(B) + ", length " + std::to_string(T) + ", prompt " +
                    std::to_string(P) + ", extra_capacity " + std::to_string(o.extra_capacity) + ", d_model " +
                    std::to_string(D) + " cannot be checked",
                "batch, length and d_model >= 1, 1 <= prompt <= length, extra_capacity >= 0");

  ParameterStore store(be);
  plugin_call(attention, "build", [&] { attention.build(ParamScope(store, o.seed, "self_attn"), dims, AttentionRole::Self); });
  if (positions) plugin_call(*positions, "build", [&] { positions->build(ParamScope(store, o.seed, "positions"), dims); });
  const PositionCapabilities caps = positions ? capabilities_of(*positions) : PositionCapabilities{};
  const bool rotates = caps.rotates;
  const bool biases = caps.biases_logits;

  const std::vector<float> x = init_values(Init::uniform(1.0f), {B, T, D}, o.seed, "cache_equivalence.x");  // [B, T, D]
  Graph g(be, o.seed, 0, /*training=*/false, /*grad=*/false);

  // One causal self-attention call over positions first .. first+n-1 of x, as the model makes it
  // (model/transformer.cpp: embed, then run_stack): y [B, n, D] on the host.
  const auto attend = [&](std::int64_t first, std::int64_t n, KeyValueCache* cache, const Tensor* filled) {
    std::vector<float> rows(static_cast<std::size_t>(B * n * D));  // x[:, first:first+n, :]
    for (std::int64_t b = 0; b < B; ++b) std::copy_n(x.begin() + (b * T + first) * D, n * D, rows.begin() + b * n * D);
    Tensor chunk = be.empty({B, n, D}, DType::F32);
    be.copy_from_host(chunk, rows.data());
    Var h = g.constant(chunk);  // [B, n, D]
    if (positions) h = plugin_call(*positions, "forward", [&] { return positions->forward(g, h, first); });
    AttentionCall call;
    call.x = h;
    call.mask.causal = true;
    call.mask.query_offset = first;
    call.mask.key_lengths = filled;  // I32 [B]: positions so far (cached); null in the full pass
    call.cache = cache;
    std::optional<EncodingPositions> at;
    if (rotates) {
      const Tensor p = EncodingPositions::range(be, first, n);
      call.positions = &at.emplace(*positions, p, p);
    }
    if (biases) {
      const std::int64_t S = cache ? cache->capacity() : n;
      const PositionalEncoding::LogitBias bias =
          plugin_call(*positions, "logit_bias", [&] { return positions->logit_bias(g, n, S, first, 0); });
      call.mask.bias = bias.bias;
      call.mask.slopes = bias.slopes;
    }
    const Var y = plugin_call(attention, "forward", [&] { return attention.forward(g, call); });
    if (y.shape() != Shape{B, n, D})
      throw Error("cache_equivalence: " + plugin_of(attention) + " returned " + y.shape().str() + " for x " +
                  Shape{B, n, D}.str() + "; expected " + Shape{B, n, D}.str());
    return host_floats(be, y.value());
  };

  const std::vector<float> full = attend(0, T, nullptr, nullptr);  // [B, T, D]
  std::vector<float> cached(full.size());                          // [B, T, D], position by position
  KeyValueCache cache(capacity);
  Tensor filled = be.empty({B}, DType::I32);
  for (std::int64_t first = 0; first < T;) {
    const std::int64_t n = first == 0 ? P : 1;
    be.fill(filled, static_cast<float>(first + n));
    const std::vector<float> part = attend(first, n, &cache, &filled);  // [B, n, D]
    for (std::int64_t b = 0; b < B; ++b) std::copy_n(part.begin() + b * n * D, n * D, cached.begin() + (b * T + first) * D);
    first += n;
  }

  std::ostringstream header;
  header << "cache_equivalence: " << plugin_of(attention) << " with positions "
         << (positions ? plugin_of(*positions) : std::string("(none)")) << (rotates ? " [rotates q, k]" : "")
         << (biases ? " [biases logits]" : "") << "; B " << B << ", T " << T << ", D " << D << ", H " << dims.heads
         << "; full causal pass vs cached: " << P << " prompt positions, then 1 per step, cache capacity " << capacity << "\n";
  return compare_cached(full, cached, {B, T, D}, P, o, header.str());
}

}  // namespace ablate::testing
