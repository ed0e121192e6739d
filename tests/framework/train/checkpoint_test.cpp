// Tests for training checkpoints: a bit-exact round trip of values, optimizer state (Adam's m and
// v, Lion's m alone), run state and spec that resumes the optimizer identically; the documented byte layout; and refusals (mismatched model,
// corrupt, truncated, foreign or missing files, failed writes) that leave store and disk intact;
// weights-only checkpoints, their averaging and the last N kept of a run (train.keep_checkpoints).
#include "train/checkpoint.hpp"

#include <sys/resource.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

#include "ablate/error.hpp"
#include "ablate/optimizer.hpp"
#include "framework/core/backend_fixture.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"

namespace ablate::train {
namespace {
using ablate::testing::error_of;
using ablate::testing::ramp;
using ablate::testing::reference_backend;
using ablate::testing::TempDir;
using Bytes = std::vector<unsigned char>;

// A small model: parameters of ranks 1 to 3 with different initialisations, all drawn from `seed`.
void build_model(ParameterStore& store, std::uint64_t seed) {
  store.add("encoder.embed.weight", {7, 5}, Init::normal(0.5f), seed);
  store.add("encoder.layers.0.ffn.bias", {5}, Init::uniform(0.3f), seed);
  store.add("decoder.layers.0.attn.qkv.weight", {2, 3, 4}, Init::xavier_uniform(), seed);
  store.add("final_norm.gamma", {3}, Init::ones(), seed);
}

// Deterministic non-zero gradients, different per parameter and per `phase`.
void upload_grads(ParameterStore& store, float phase) {
  float offset = phase;
  for (Parameter* p : store.all()) {
    store.backend().copy_from_host(p->grad, ramp(p->grad.numel(), offset += 0.37f).data());
  }
}

Bytes bytes_of(Backend& be, const Tensor& t) {
  Bytes out(t.bytes());
  be.copy_to_host(out.data(), t);
  return out;
}

// Every tensor of the store as raw host bytes; an undefined moment is an empty entry.
struct Snapshot {
  std::map<std::string, Bytes> value, m, v, compute;
  std::map<std::string, bool> has_moments;
};

Snapshot snapshot(ParameterStore& store) {
  Snapshot s;
  Backend& be = store.backend();
  for (Parameter* p : store.all()) {
    s.value[p->name] = bytes_of(be, p->value);
    s.compute[p->name] = bytes_of(be, p->compute);
    s.has_moments[p->name] = p->m.defined();
    if (p->m.defined()) s.m[p->name] = bytes_of(be, p->m);
    if (p->v.defined()) s.v[p->name] = bytes_of(be, p->v);
  }
  return s;
}

// Bit-for-bit equality (memcmp) of two snapshots, naming the first differing tensor.
void expect_bit_equal(const Snapshot& a, const Snapshot& b) {
  auto same = [](const std::map<std::string, Bytes>& x, const std::map<std::string, Bytes>& y, const char* what) {
    ASSERT_EQ(x.size(), y.size()) << what;
    for (const auto& [name, bytes] : x) {
      const auto it = y.find(name);
      ASSERT_NE(it, y.end()) << what << " of " << name;
      ASSERT_EQ(bytes.size(), it->second.size()) << what << " of " << name;
      EXPECT_EQ(std::memcmp(bytes.data(), it->second.data(), bytes.size()), 0) << what << " of " << name;
    }
  };
  EXPECT_EQ(a.has_moments, b.has_moments);
  same(a.value, b.value, "value");
  same(a.compute, b.compute, "compute");
  same(a.m, b.m, "optimizer m");
  same(a.v, b.v, "optimizer v");
}

TrainState sample_state() {
  return {.step = 1234,
          .optimizer_steps = 1230,
          .tokens_seen = 9876543210,
          .flops_seen = 1.5e18 + 0.25e3,
          .elapsed_seconds = 3601.25,
          .has_best = true,
          .best_metric = 0.1 + 0.2,  // not exactly representable: must survive bit for bit
          .best_step = 1000,
          .evals_since_best = 3,
          .log_loss_sum = 12.5,
          .log_steps = 4};
}

Bytes read_file(const std::filesystem::path& f) {
  std::ifstream in(f, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file(const std::filesystem::path& f, const Bytes& bytes) {
  std::ofstream out(f, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string> listing(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::shared_ptr<Optimizer> rule(const std::string& name) { return ablate::testing::builtin_registry().create<Optimizer>(name); }

class CheckpointRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(CheckpointRoundTrip, RestoresValuesStateAndSpecBitForBitAndResumesTheOptimizerIdentically) {
  TempDir dir;
  const auto file = dir.path() / "step_1234.ckpt";
  Backend& be = reference_backend();
  ParameterStore trained(be);
  build_model(trained, 1);
  OptimizerDriver adam(be, rule(GetParam()), 0.01);
  upload_grads(trained, 0.0f);
  adam.step(trained, 1e-2, 1.0);
  upload_grads(trained, 1.0f);
  adam.step(trained, 1e-2, 1.0);
  const std::string spec = std::string("model:\n  d_model: 8  # ümlaut\n") + '\0' + "after a NUL\n";
  TrainState state = sample_state();
  state.optimizer_steps = adam.steps_taken();
  save_checkpoint(file, trained, state, spec);

  ParameterStore resumed(be);
  build_model(resumed, 2);  // different initial values: the load must overwrite all of them
  ASSERT_NE(snapshot(resumed).value, snapshot(trained).value);
  const LoadedCheckpoint loaded = load_checkpoint(file, resumed);
  EXPECT_EQ(loaded.state, state);
  EXPECT_EQ(loaded.spec_yaml, spec);
  const Snapshot before = snapshot(trained);
  for (const auto& [name, has] : before.has_moments) EXPECT_TRUE(has) << name;
  for (Parameter* p : resumed.all()) EXPECT_EQ(p->v.defined(), GetParam() == "adam") << "Lion keeps m alone: " << p->name;
  expect_bit_equal(snapshot(resumed), before);

  // One more identical step on both: the resumed optimizer continues exactly.
  OptimizerDriver adam2(be, rule(GetParam()), 0.01);
  adam2.set_steps_taken(loaded.state.optimizer_steps);
  upload_grads(trained, 2.0f);
  upload_grads(resumed, 2.0f);
  adam.step(trained, 1e-2, 1.0);
  adam2.step(resumed, 1e-2, 1.0);
  const Snapshot after = snapshot(trained);
  ASSERT_NE(after.value, before.value);
  expect_bit_equal(snapshot(resumed), after);
}

INSTANTIATE_TEST_SUITE_P(Rules, CheckpointRoundTrip, ::testing::Values("adam", "lion"));

TEST(Checkpoint, AveragingSetsEachValueToTheMeanOfTheFilesAndRefusesAnotherRun) {
  TempDir dir;
  Backend& be = reference_backend();
  std::vector<std::filesystem::path> files;
  std::vector<Snapshot> snaps;
  for (std::uint64_t seed : {1, 2, 3}) {  // three checkpoints of "one run": other values, the same spec
    ParameterStore s(be);
    build_model(s, seed);
    OptimizerDriver adam(be, rule("adam"), 0.0);
    upload_grads(s, static_cast<float>(seed));
    adam.step(s, 1e-2, 1.0);
    TrainState state = sample_state();
    state.step = static_cast<std::int64_t>(seed) * 100;
    files.push_back(dir.path() / ("c" + std::to_string(seed) + ".bin"));
    save_checkpoint(files.back(), s, state, "spec: one run\n", false);
    snaps.push_back(snapshot(s));
  }
  ParameterStore avg(be);
  build_model(avg, 9);
  const LoadedCheckpoint last = load_average(files, avg);
  EXPECT_EQ(last.state.step, 300) << "the last file's state";
  for (Parameter* p : avg.all()) {
    std::vector<float> got(static_cast<std::size_t>(p->value.numel()));
    be.copy_to_host(got.data(), p->value);
    for (std::size_t j = 0; j < got.size(); ++j) {
      double sum = 0.0;
      for (const Snapshot& s : snaps) {
        float x;
        std::memcpy(&x, s.value.at(p->name).data() + 4 * j, 4);
        sum += x;
      }
      ASSERT_EQ(got[j], static_cast<float>(sum / 3.0)) << p->name << "[" << j << "]: summed in double, rounded once";
    }
  }
  // A weights-only file: no moments, a third of the size; it loads as a checkpoint taken before the first step.
  ParameterStore plain(be);
  build_model(plain, 1);
  load_checkpoint(files[0], plain);
  for (Parameter* p : plain.all()) EXPECT_FALSE(p->m.defined()) << p->name;
  ParameterStore other(be);
  build_model(other, 4);
  save_checkpoint(dir.path() / "other.bin", other, sample_state(), "spec: another run\n", false);
  const std::string mixed = error_of([&] { load_average({files[0], dir.path() / "other.bin"}, avg); });
  EXPECT_NE(mixed.find("other.bin: holds another spec than"), std::string::npos) << mixed;
}

TEST(Checkpoint, KeptCheckpointsAreTheLastNByStep) {
  TempDir dir;
  Backend& be = reference_backend();
  ParameterStore s(be);
  build_model(s, 1);
  TrainState state = sample_state();
  for (std::int64_t step : {50, 100, 150, 1000, 1050}) {
    state.step = step;
    keep_checkpoint(dir.path(), s, state, "spec\n", 3);
  }
  const std::vector<std::filesystem::path> kept = kept_checkpoints(dir.path());
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].filename(), "step-0000000150.bin") << "step order, not name length order";
  EXPECT_EQ(kept[2].filename(), "step-0000001050.bin");
  EXPECT_EQ(read_checkpoint(kept[2]).state.step, 1050);
  EXPECT_TRUE(kept_checkpoints(dir.path() / "none").empty());
}

TEST(Checkpoint, MixedPrecisionStoreGetsItsBf16ComputeCopiesRefreshed) {
  Backend& be = reference_backend();
  if (!be.caps().bf16) GTEST_SKIP() << "no bf16 on this backend";
  TempDir dir;
  const auto file = dir.path() / "mixed.ckpt";
  ParameterStore trained(be, DType::BF16);
  build_model(trained, 1);
  OptimizerDriver adam(be, rule("adam"), 0.0);
  upload_grads(trained, 0.0f);
  adam.step(trained, 1e-2, 0.0);
  save_checkpoint(file, trained, TrainState{}, "spec");

  ParameterStore resumed(be, DType::BF16);
  build_model(resumed, 7);
  load_checkpoint(file, resumed);
  expect_bit_equal(snapshot(resumed), snapshot(trained));  // includes the bf16 compute copies
}

TEST(Checkpoint, SavedBeforeTheFirstStepLeavesMomentsUndefined) {
  TempDir dir;
  const auto file = dir.path() / "step_0.ckpt";
  Backend& be = reference_backend();
  ParameterStore fresh(be);
  build_model(fresh, 1);
  save_checkpoint(file, fresh, TrainState{}, "");

  // Into a store whose optimizer has run: its moments are dropped, as the file has none.
  ParameterStore stepped(be);
  build_model(stepped, 2);
  upload_grads(stepped, 0.0f);
  OptimizerDriver adam(be, rule("adam"), 0.0);
  adam.step(stepped, 1e-2, 0.0);
  const LoadedCheckpoint loaded = load_checkpoint(file, stepped);
  EXPECT_EQ(loaded.state, TrainState{});
  EXPECT_EQ(loaded.spec_yaml, "");
  for (Parameter* p : stepped.all()) {
    EXPECT_FALSE(p->m.defined()) << p->name;
    EXPECT_FALSE(p->v.defined()) << p->name;
  }
  expect_bit_equal(snapshot(stepped), snapshot(fresh));

  // And the first step then starts Adam afresh on both, identically.
  OptimizerDriver a(be, rule("adam"), 0.0), b(be, rule("adam"), 0.0);
  upload_grads(fresh, 3.0f);
  upload_grads(stepped, 3.0f);
  a.step(fresh, 1e-2, 0.0);
  b.step(stepped, 1e-2, 0.0);
  expect_bit_equal(snapshot(stepped), snapshot(fresh));
}

TEST(Checkpoint, FileMatchesTheDocumentedLayout) {
  TempDir dir;
  const auto file = dir.path() / "layout.ckpt";
  Backend& be = reference_backend();
  ParameterStore store(be);
  Parameter& w = store.add("w", {2}, Init::zeros(), 1);
  const float values[2] = {1.5f, -2.0f};
  be.copy_from_host(w.value, values);
  // Every field away from its default, in the order the layout writes them (the put()s below).
  const TrainState state{3, 2, 40, 6.5e9, 0.5, true, -1.0, 2, 1, 2.25, 7.0, 3.0, 0.75, 2};
  save_checkpoint(file, store, state, "a: 1\n");

  Bytes payload;
  auto put = [&](const auto& v) {
    const auto* p = reinterpret_cast<const unsigned char*>(&v);
    payload.insert(payload.end(), p, p + sizeof v);
  };
  put(std::int64_t{3}), put(std::int64_t{2}), put(std::int64_t{40}), put(6.5e9), put(0.5), put(std::uint8_t{1});
  put(-1.0), put(std::int64_t{2}), put(std::int64_t{1});
  put(2.25), put(7.0), put(3.0), put(0.75), put(std::int64_t{2});  // train-log sums
  put(std::uint64_t{5});
  for (char c : std::string("a: 1\n")) put(c);
  put(std::uint64_t{1});                        // one parameter
  put(std::uint32_t{1}), put('w');              // name
  put(std::uint32_t{1}), put(std::int64_t{2});  // rank 1, [2]
  put(std::uint8_t{0});                         // no moments
  put(1.5f), put(-2.0f);

  Bytes expected;
  for (char c : std::string("ABLATECK")) expected.push_back(static_cast<unsigned char>(c));
  auto put_le = [&](std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) expected.push_back(static_cast<unsigned char>(v >> (8 * i)));
  };
  put_le(2, 4);  // version
  put_le(0, 4);  // reserved
  put_le(payload.size(), 8);
  expected.insert(expected.end(), payload.begin(), payload.end());
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64, written out independently of the library
  for (unsigned char c : payload) h = (h ^ c) * 0x100000001b3ull;
  put_le(h, 8);
  EXPECT_EQ(read_file(file), expected);
  EXPECT_EQ(fnv1a64(payload.data(), payload.size()), h);

  // Version 1 (no flops_seen) still loads, with the FLOPs unknown from then on.
  Bytes v1 = expected;
  v1.erase(v1.begin() + 24 + 3 * 8, v1.begin() + 24 + 4 * 8);  // flops_seen
  v1[8] = 1;
  const std::uint64_t p1 = payload.size() - 8;
  for (int i = 0; i < 8; ++i) v1[16 + i] = static_cast<unsigned char>(p1 >> (8 * i));
  std::uint64_t h1 = 0xcbf29ce484222325ull;
  for (std::size_t i = 24; i < 24 + p1; ++i) h1 = (h1 ^ v1[i]) * 0x100000001b3ull;
  for (int i = 0; i < 8; ++i) v1[24 + p1 + i] = static_cast<unsigned char>(h1 >> (8 * i));
  v1.resize(24 + p1 + 8);
  const auto old_file = dir.path() / "v1.ckpt";
  write_file(old_file, v1);
  ParameterStore again(be);
  again.add("w", {2}, Init::zeros(), 1);
  const LoadedCheckpoint loaded = load_checkpoint(old_file, again);
  EXPECT_EQ(loaded.state.tokens_seen, 40);
  EXPECT_TRUE(std::isnan(loaded.state.flops_seen));
  EXPECT_EQ(loaded.state.elapsed_seconds, 0.5);
  EXPECT_EQ(loaded.state.log_steps, 2);
}

// --- mismatched models: each error names the parameter, and the store is left as it was.

class CheckpointMismatch : public ::testing::Test {
 protected:
  // Saves a model of `file_params` and loads it into one of `store_params`; returns the error
  // text and checks the store kept its values.
  std::string load_error(const std::map<std::string, Shape>& file_params, const std::map<std::string, Shape>& store_params) {
    Backend& be = reference_backend();
    const auto file = dir_.path() / "model.ckpt";
    ParameterStore saved(be);
    for (const auto& [name, shape] : file_params) saved.add(name, shape, Init::uniform(1.0f), 1);
    save_checkpoint(file, saved, sample_state(), "spec");
    ParameterStore target(be);
    for (const auto& [name, shape] : store_params) target.add(name, shape, Init::uniform(1.0f), 2);
    const Snapshot before = snapshot(target);
    const std::string err = error_of([&] { load_checkpoint(file, target); });
    expect_bit_equal(snapshot(target), before);
    EXPECT_NE(err.find(file.string()), std::string::npos) << err;
    return err;
  }
  TempDir dir_;
};

TEST_F(CheckpointMismatch, ParameterMissingFromTheFileIsNamed) {
  const std::string err = load_error({{"a", {3}}, {"b", {2, 2}}}, {{"a", {3}}, {"b", {2, 2}}, {"decoder.extra.bias", {4}}});
  EXPECT_NE(err.find("1 model parameter missing from the file ('decoder.extra.bias')"), std::string::npos) << err;
}

TEST_F(CheckpointMismatch, ParameterOnlyInTheFileIsNamed) {
  const std::string err = load_error({{"a", {3}}, {"b", {2, 2}}, {"old.gate", {2}}}, {{"a", {3}}, {"b", {2, 2}}});
  EXPECT_NE(err.find("1 parameter in the file but not in the model ('old.gate')"), std::string::npos) << err;
}

TEST_F(CheckpointMismatch, ShapeMismatchNamesTheParameterAndBothShapes) {
  const std::string err = load_error({{"a", {3}}, {"proj.weight", {3, 4}}}, {{"a", {3}}, {"proj.weight", {4, 3}}});
  EXPECT_NE(err.find("'proj.weight' is [4, 3] in the model, [3, 4] in the file"), std::string::npos) << err;
}

TEST_F(CheckpointMismatch, ManyMissingAreCountedAndTheFirstFewNamed) {
  std::map<std::string, Shape> many;
  for (int i = 0; i < 8; ++i) many["layer" + std::to_string(i) + ".w"] = Shape{2};
  const std::string err = load_error({{"other", {1}}}, many);
  EXPECT_NE(err.find("8 model parameters missing from the file ('layer0.w', 'layer1.w', 'layer2.w', 'layer3.w', "
                     "'layer4.w' and 3 more)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("'other'"), std::string::npos) << err;
}

// --- damaged files: refused with a clear reason, never a crash, store untouched.

class CheckpointDamage : public ::testing::Test {
 protected:
  void SetUp() override {
    build_model(saved_, 1);
    upload_grads(saved_, 0.0f);
    OptimizerDriver(reference_backend(), rule("adam"), 0.0).step(saved_, 1e-2, 0.0);
    save_checkpoint(file_, saved_, sample_state(), "spec: yes\n");
    good_ = read_file(file_);
    build_model(target_, 2);
    before_ = snapshot(target_);
  }
  // Writes `bytes` as the checkpoint, loads it into the target and returns the error text.
  std::string load_error(const Bytes& bytes) {
    write_file(file_, bytes);
    const std::string err = error_of([&] { load_checkpoint(file_, target_); });
    expect_bit_equal(snapshot(target_), before_);
    EXPECT_NE(err.find(file_.string()), std::string::npos) << err;
    return err;
  }
  TempDir dir_;
  std::filesystem::path file_ = dir_.path() / "damaged.ckpt";
  ParameterStore saved_{reference_backend()}, target_{reference_backend()};
  Bytes good_;
  Snapshot before_;
};

TEST_F(CheckpointDamage, TheUndamagedFileLoads) {
  write_file(file_, good_);
  load_checkpoint(file_, target_);
  expect_bit_equal(snapshot(target_), snapshot(saved_));
}

TEST_F(CheckpointDamage, FlippedByteIsReportedAsCorrupt) {
  // The middle (float data), the first payload byte (state), a name byte and the checksum itself.
  const std::string spec_name = "encoder.embed.weight";
  const auto name_at = std::search(good_.begin(), good_.end(), spec_name.begin(), spec_name.end()) - good_.begin();
  for (const std::size_t at : {good_.size() / 2, std::size_t{24}, static_cast<std::size_t>(name_at) + 3, good_.size() - 1}) {
    Bytes bad = good_;
    bad[at] ^= 0x10;
    const std::string err = load_error(bad);
    EXPECT_NE(err.find("corrupt: checksum mismatch"), std::string::npos) << "byte " << at << ": " << err;
  }
}

TEST_F(CheckpointDamage, TruncatedFilesAreRefused) {
  for (const std::size_t n :
       {std::size_t{0}, std::size_t{4}, std::size_t{8}, std::size_t{24}, good_.size() / 2, good_.size() - 8, good_.size() - 1}) {
    const std::string err = load_error(Bytes(good_.begin(), good_.begin() + static_cast<std::ptrdiff_t>(n)));
    EXPECT_NE(err.find("is truncated"), std::string::npos) << n << " bytes: " << err;
  }
}

TEST_F(CheckpointDamage, TrailingBytesAreRefused) {
  Bytes longer = good_;
  longer.push_back(0);
  const std::string err = load_error(longer);
  EXPECT_NE(err.find("corrupt: 1 unexpected byte after its end"), std::string::npos) << err;
}

TEST_F(CheckpointDamage, WrongMagicIsNotACheckpoint) {
  Bytes bad = good_;
  bad[0] = 'X';
  EXPECT_NE(load_error(bad).find("is not an Ablate checkpoint"), std::string::npos);
  const std::string yaml = "model:\n  d_model: 512\n";
  EXPECT_NE(load_error(Bytes(yaml.begin(), yaml.end())).find("is not an Ablate checkpoint"), std::string::npos);
  EXPECT_NE(load_error(Bytes{'A', 'B', 'X'}).find("is not an Ablate checkpoint"), std::string::npos);
}

TEST_F(CheckpointDamage, OtherFormatVersionIsRefused) {
  Bytes bad = good_;
  bad[8] = 3;
  const std::string err = load_error(bad);
  EXPECT_NE(err.find("has format version 3; this Ablate reads versions 1 to 2"), std::string::npos) << err;
}

TEST_F(CheckpointDamage, WellSummedButMalformedPayloadIsRefused) {
  // A rank of 9 with a valid checksum: the parser must refuse it, not trust the checksum.
  const std::string name = "encoder.embed.weight";
  const auto rank_at =
      static_cast<std::size_t>(std::search(good_.begin(), good_.end(), name.begin(), name.end()) - good_.begin()) + name.size();
  Bytes bad = good_;
  ASSERT_EQ(bad[rank_at], 2);
  bad[rank_at] = 9;
  const std::size_t payload = bad.size() - 32;
  const std::uint64_t h = fnv1a64(bad.data() + 24, payload);
  std::memcpy(bad.data() + 24 + payload, &h, 8);
  const std::string err = load_error(bad);
  EXPECT_NE(err.find("is malformed: parameter 'encoder.embed.weight' has rank 9"), std::string::npos) << err;
}

TEST(Checkpoint, MissingOrUnreadableFileIsNamed) {
  TempDir dir;
  ParameterStore store(reference_backend());
  build_model(store, 1);
  const auto missing = dir.path() / "nope.ckpt";
  std::string err = error_of([&] { load_checkpoint(missing, store); });
  EXPECT_NE(err.find("cannot read checkpoint " + missing.string() + ": No such file or directory"), std::string::npos) << err;
  err = error_of([&] { load_checkpoint(dir.path(), store); });
  EXPECT_NE(err.find(dir.path().string() + ": is a directory"), std::string::npos) << err;
}

// --- atomic writes

TEST(Checkpoint, SaveReplacesTheOldCheckpointAndLeavesNoTemporaryFile) {
  TempDir dir;
  const auto file = dir.path() / "latest.ckpt";
  ParameterStore store(reference_backend());
  build_model(store, 1);
  TrainState first;
  first.step = 10;
  save_checkpoint(file, store, first, "one");
  EXPECT_EQ(listing(dir.path()), std::vector<std::string>{"latest.ckpt"});
  TrainState second;
  second.step = 20;
  save_checkpoint(file, store, second, "two");
  EXPECT_EQ(listing(dir.path()), std::vector<std::string>{"latest.ckpt"});
  const LoadedCheckpoint loaded = load_checkpoint(file, store);
  EXPECT_EQ(loaded.state.step, 20);
  EXPECT_EQ(loaded.spec_yaml, "two");
}

TEST(Checkpoint, SaveIntoAMissingDirectoryNamesThePathAndLeavesNothing) {
  TempDir dir;
  const auto file = dir.path() / "no_such_dir" / "latest.ckpt";
  ParameterStore store(reference_backend());
  build_model(store, 1);
  const std::string err = error_of([&] { save_checkpoint(file, store, TrainState{}, ""); });
  EXPECT_NE(err.find("cannot write checkpoint " + file.string()), std::string::npos) << err;
  EXPECT_NE(err.find("No such file or directory"), std::string::npos) << err;
  EXPECT_NE(err.find((dir.path() / "no_such_dir").string() + " exists"), std::string::npos) << err;  // the hint
  EXPECT_TRUE(listing(dir.path()).empty());
}

TEST(Checkpoint, FailedRenameRemovesTheTemporaryFile) {
  // The target is a directory: the whole file gets written, then the rename fails.
  TempDir dir;
  const auto file = dir.path() / "latest.ckpt";
  std::filesystem::create_directory(file);
  ParameterStore store(reference_backend());
  build_model(store, 1);
  const std::string err = error_of([&] { save_checkpoint(file, store, TrainState{}, ""); });
  EXPECT_NE(err.find("cannot write checkpoint " + file.string() + ": renaming"), std::string::npos) << err;
  EXPECT_EQ(listing(dir.path()), std::vector<std::string>{"latest.ckpt"});
  EXPECT_TRUE(std::filesystem::is_directory(file));
}

// Lowers the file-size limit (RLIMIT_FSIZE) so writes past `bytes` fail with EFBIG, as on a
// full disk; restores the limit and SIGXFSZ's disposition on scope exit.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit lowered = saved_;
    lowered.rlim_cur = bytes;
    ok_ = ::setrlimit(RLIMIT_FSIZE, &lowered) == 0;
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_handler_);
  }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  void (*old_handler_)(int) = nullptr;
  bool ok_ = false;
};

TEST(Checkpoint, WriteFailureKeepsTheOldCheckpointAndRemovesTheTemporaryFile) {
  TempDir dir;
  const auto file = dir.path() / "latest.ckpt";
  Backend& be = reference_backend();
  ParameterStore small(be);
  small.add("w", {4}, Init::uniform(1.0f), 1);
  TrainState old_state;
  old_state.step = 5;
  save_checkpoint(file, small, old_state, "old");
  const Bytes old_bytes = read_file(file);

  ParameterStore big(be);
  big.add("w", {4}, Init::uniform(1.0f), 2);
  big.add("big", {64, 1024}, Init::uniform(1.0f), 2);  // 256 KiB: past the limit below
  std::string err;
  {
    FileSizeLimit limit(64 * 1024);
    if (!limit.ok()) GTEST_SKIP() << "cannot lower RLIMIT_FSIZE here";
    try {
      save_checkpoint(file, big, TrainState{}, "new");
    } catch (const Error& e) {
      err = std::string(e.what()) + " | " + e.hint();
    }
  }
  EXPECT_NE(err.find("cannot write checkpoint " + file.string() + ": writing"), std::string::npos) << err;
  EXPECT_NE(err.find("File too large"), std::string::npos) << err;
  EXPECT_EQ(listing(dir.path()), std::vector<std::string>{"latest.ckpt"});
  EXPECT_EQ(read_file(file), old_bytes);
  EXPECT_EQ(load_checkpoint(file, small).state, old_state);
}

}  // namespace
}  // namespace ablate::train
