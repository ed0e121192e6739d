// Tests for option resolution: typed parsing, defaults, required options, choices, and the
// UsageErrors (with suggestions) for unknown or ill-typed options.
#include "plugin_host/option_resolver.hpp"

#include <gtest/gtest.h>

namespace ablate {
namespace {

PluginDescriptor demo_plugin() {
  PluginDescriptor d;
  d.kind = "block";
  d.name = "demo";
  d.options = {
      {"dropout", OptionType::Float, "0.1", {}, "residual dropout"},
      {"layers", OptionType::Int, std::nullopt, {}, "how many layers"},
      {"final_norm", OptionType::Bool, "true", {}, "norm after the stack"},
      {"norm", OptionType::String, "layer_norm", {"layer_norm", "rms_norm"}, "which norm"},
  };
  return d;
}

std::string usage_error_of(const std::map<std::string, std::string>& given) {
  try {
    resolve_options(demo_plugin(), given);
  } catch (const UsageError& e) {
    return std::string(e.what()) + " | " + e.hint();
  }
  return "no error";
}

TEST(ResolveOptions, FillsDefaultsAndParsesGivenValues) {
  const Options o = resolve_options(demo_plugin(), {{"layers", "6"}, {"norm", "rms_norm"}, {"final_norm", "off"}});
  EXPECT_EQ(o.get_int("layers"), 6);
  EXPECT_DOUBLE_EQ(o.get_float("dropout"), 0.1);
  EXPECT_FALSE(o.get_bool("final_norm"));
  EXPECT_EQ(o.get_string("norm"), "rms_norm");
  EXPECT_EQ(o.values().size(), 4u);
}

TEST(ResolveOptions, UnknownOptionIsAnErrorWithSuggestion) {
  const std::string e = usage_error_of({{"layers", "2"}, {"dropuot", "0.2"}});
  EXPECT_NE(e.find("block/demo has no option 'dropuot'"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'dropout'"), std::string::npos) << e;
  EXPECT_NE(e.find("final_norm"), std::string::npos) << e;  // lists the declared options
}

TEST(ResolveOptions, MissingRequiredOptionIsAnError) {
  const std::string e = usage_error_of({});
  EXPECT_NE(e.find("required option 'layers' is not set"), std::string::npos) << e;
}

TEST(ResolveOptions, IllTypedValuesAreErrorsNamingTheExpectedType) {
  EXPECT_NE(usage_error_of({{"layers", "2.5"}}).find("expected an integer"), std::string::npos);
  EXPECT_NE(usage_error_of({{"layers", "6x"}}).find("expected an integer"), std::string::npos);
  EXPECT_NE(usage_error_of({{"layers", ""}}).find("expected an integer"), std::string::npos);
  EXPECT_NE(usage_error_of({{"layers", "2"}, {"dropout", "lots"}}).find("expected a finite floating-point"), std::string::npos);
  EXPECT_NE(usage_error_of({{"layers", "2"}, {"dropout", "inf"}}).find("finite"), std::string::npos);
  EXPECT_NE(usage_error_of({{"layers", "2"}, {"final_norm", "maybe"}}).find("expected a bool"), std::string::npos);
}

TEST(ResolveOptions, StringChoicesAreEnforcedWithSuggestion) {
  const std::string e = usage_error_of({{"layers", "2"}, {"norm", "rms_nrom"}});
  EXPECT_NE(e.find("one of: layer_norm, rms_norm"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'rms_norm'"), std::string::npos) << e;
}

TEST(ParseOptionValue, AcceptsTheDocumentedBoolSpellings) {
  const OptionDescriptor flag{"flag", OptionType::Bool, "false", {}, ""};
  for (const char* t : {"true", "yes", "on", "1"}) EXPECT_TRUE(std::get<bool>(parse_option_value(flag, t, "x"))) << t;
  for (const char* f : {"false", "no", "off", "0"}) EXPECT_FALSE(std::get<bool>(parse_option_value(flag, f, "x"))) << f;
}

TEST(ParseOptionValue, IntegersKeepTheirSignAndRange) {
  const OptionDescriptor n{"n", OptionType::Int, "0", {}, ""};
  EXPECT_EQ(std::get<std::int64_t>(parse_option_value(n, "-17", "x")), -17);
  EXPECT_EQ(std::get<std::int64_t>(parse_option_value(n, "9000000000", "x")), 9000000000LL);
  EXPECT_THROW(parse_option_value(n, "99999999999999999999", "x"), UsageError);
}

TEST(Options, GettersRejectUndeclaredNamesAndWrongTypes) {
  Options o;
  o.set("lr", 0.5);
  EXPECT_DOUBLE_EQ(o.get_float("lr"), 0.5);
  EXPECT_THROW(o.get_int("lr"), Error);
  EXPECT_THROW(o.get_float("missing"), Error);
}

}  // namespace
}  // namespace ablate
