// Plugin API version and ABI tag: the two values the plugin host compares before it lets a
// plugin's code run. A plugin and the host agree on C++ types across the library boundary
// only when both were built by the same compiler family/version, standard library ABI and
// build flavour; the tag spells those out so a mismatch is refused with a readable message.
#pragma once

#include <cstdint>

namespace ablate {

// Bump when PluginInfo, OptionInfo, Options, Component or a kind interface changes layout or
// meaning; not for a field appended to a capabilities struct (docs/writing-plugins.md, "Keeping
// the API stable", says what does and does not bump it). PluginInfo keeps `api_version`, `abi_tag`,
// `kind` and `name` as its first four fields forever, so the host can read them from a plugin of
// any version (and say which plugin it refuses, and why).
inline constexpr std::uint32_t kPluginApiVersion = 24;  // 2: Task::score_names, Task::text, Split::Test
                                                        // 3: TaskType::Classification, TaskInfo::num_classes
                                                        // 4: PositionalEncoding::max_positions
                                                        // 5: Backend::supports, rope; kind "attention",
                                                        //    Block by role (Sublayers), PositionalEncoding::rotates
                                                        // 6: NormKind::ScaleNorm (NormLayer layout), Init::constant,
                                                        //    FeedForwardLayers::hidden/output, GatedFeedForwardLayers
                                                        // 7: ModelDims::layers/causal, PositionalEncoding::bias_per_layer,
                                                        //    logit_bias(..., layer); attention softcap, qk norms;
                                                        //    Task::size_at_length/example_at_length
                                                        // 8: Task::encode (text to token ids), Task::read_examples
                                                        // 9: PositionalEncoding::capabilities (PositionCapabilities);
                                                        //    API 8's max_positions, rotates, in_cross_attention,
                                                        //    biases_logits, bias_per_layer deprecated (gone in 10)
                                                        // 10: Backend's ops public non-virtual (contract, then the
                                                        //    protected do_<op>; ablate/backend_ops.hpp); API 8's
                                                        //    position hooks removed
                                                        // 11: Example::reference (the target as written)
                                                        // 12: kind "tokenizer", Task::prepare (TaskContext)
                                                        // 13: Backend op dropout_add_forward (a new virtual),
                                                        //    Graph::pass_grad, ParameterStore::packed,
                                                        //    TaskInfo::shared_vocabulary
                                                        // 14: TaskContext::stored_tokenizer; token shards
                                                        //    (ablate/token_shards.hpp) in the core
                                                        // 15: subword sampling: Tokenizer::samples and
                                                        //    encode_sampled, Task::train_example
                                                        // 16: Graph::add_flops/flops (compute accounting)
                                                        // 17: Task::read_examples reports a ReadReport (what
                                                        //    the length rules dropped or cut)
                                                        // 18: TaskContext::keep_tokenizer (a task's own
                                                        //    vocabularies kept with the run);
                                                        //    ModelDims::layer and ::context;
                                                        //    PositionalEncoding::rotate_queries/keys;
                                                        //    Block::init_sublayers
                                                        // 19: Backend ops compare_forward, permute_forward/
                                                        //    backward, rope_frequencies_forward/backward
                                                        //    (OptionalOp::compare, permute, rope_frequencies)
                                                        // 20: kind "optimizer" (ablate/optimizer.hpp: Optimizer,
                                                        //    OptimizerDriver, ParameterRole); Parameter::state,
                                                        //    ParameterStore::set_packing_order, packed_span
                                                        // 21: Example::cut (a window of a longer text: no eos
                                                        //    target after it)
                                                        // 22: GradStore: linear/layer_norm/rms_norm_backward's
                                                        //    dx_store, AttentionParams::dq/dk/dv_store;
                                                        //    Graph::grad_out
                                                        // 23: AttentionParams::packed (PackedHeads,
                                                        //    OptionalOp::packed_heads), attention_shape;
                                                        //    ops::packed_attention, AttentionProjections::attend
                                                        // 24: Backend ops linear_dropout_forward/backward
                                                        //    (OptionalOp::linear_dropout), ops::linear_dropout

}  // namespace ablate

#define ABLATE_ABI_STR_(x) #x
#define ABLATE_ABI_STR(x) ABLATE_ABI_STR_(x)

#if defined(__clang__)
#define ABLATE_ABI_COMPILER "clang-" ABLATE_ABI_STR(__clang_major__) "." ABLATE_ABI_STR(__clang_minor__)
#elif defined(__GNUC__)
#define ABLATE_ABI_COMPILER "gcc-" ABLATE_ABI_STR(__GNUC__) "." ABLATE_ABI_STR(__GNUC_MINOR__)
#else
#define ABLATE_ABI_COMPILER "unknown-compiler"
#endif

#if defined(_LIBCPP_VERSION)
#define ABLATE_ABI_STDLIB "libc++"
#elif defined(_GLIBCXX_USE_CXX11_ABI) && _GLIBCXX_USE_CXX11_ABI
#define ABLATE_ABI_STDLIB "libstdc++-cxx11"
#else
#define ABLATE_ABI_STDLIB "libstdc++-old"
#endif

#if defined(_GLIBCXX_DEBUG)
#define ABLATE_ABI_DEBUG_STL "+debug-stl"
#else
#define ABLATE_ABI_DEBUG_STL ""
#endif

#if defined(__SANITIZE_ADDRESS__)
#define ABLATE_ABI_ASAN "+asan"
#else
#define ABLATE_ABI_ASAN ""
#endif

// Set by CMake (target Ablate::plugin_sdk / ablate_core) to the configuration being built.
#ifndef ABLATE_BUILD_TYPE
#define ABLATE_BUILD_TYPE "unspecified"
#endif

// Example: "gcc-12.2/libstdc++-cxx11/Release" or "gcc-12.2/libstdc++-cxx11/Debug+asan".
#define ABLATE_ABI_TAG ABLATE_ABI_COMPILER "/" ABLATE_ABI_STDLIB "/" ABLATE_BUILD_TYPE ABLATE_ABI_DEBUG_STL ABLATE_ABI_ASAN
