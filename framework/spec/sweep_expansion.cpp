// expand_sweep (sweep_expansion.hpp): grid x zip x runs x seeds, and the run names.
#include "spec/sweep_expansion.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace ablate::spec {
namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

constexpr std::size_t kMaxNameBytes = 120;  // the run id after it keeps folder names unique

// A value as it reads in a file name: quotes dropped, anything but [A-Za-z0-9._+-] as '_'.
std::string name_value(std::string v) {
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) v = v.substr(1, v.size() - 2);
  for (char& c : v) {
    const auto u = static_cast<unsigned char>(c);
    if (!std::isalnum(u) && c != '.' && c != '_' && c != '+' && c != '-') c = '_';
  }
  return v.empty() ? "_" : v;
}

bool sets(const Settings& settings, const std::string& key) {
  return std::any_of(settings.begin(), settings.end(), [&](const auto& kv) { return kv.first == key; });
}

// The grid's cartesian product, first axis slowest, with the zip as one more (fastest) axis.
std::vector<Settings> grid_arms(const SweepSpec& sweep) {
  std::vector<Settings> arms = cartesian(sweep.grid);
  if (!sweep.zip.empty()) {
    std::vector<Settings> next;
    const std::size_t n = sweep.zip.front().second.size();
    for (const Settings& arm : arms)
      for (std::size_t i = 0; i < n; ++i) {
        Settings s = arm;
        for (const auto& [key, values] : sweep.zip) s.emplace_back(key, values[i]);
        next.push_back(std::move(s));
      }
    arms = std::move(next);
  }
  return arms;
}

}  // namespace

std::vector<std::vector<std::pair<std::string, std::string>>> cartesian(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& axes) {
  std::vector<Settings> out{{}};
  for (const auto& [key, values] : axes) {
    std::vector<Settings> next;
    for (const Settings& s : out)
      for (const std::string& v : values) {
        Settings t = s;
        t.emplace_back(key, v);
        next.push_back(std::move(t));
      }
    out = std::move(next);
  }
  return out;
}

std::vector<std::string> SweepPoint::overrides() const {
  std::vector<std::string> out;
  for (const auto& [key, value] : settings) out.push_back(key + "=" + value);
  return out;
}

std::string short_key(const std::string& key, const std::vector<std::string>& all_keys) {
  static const std::map<std::string, std::string> aliases = {{"model.positional_encoding", "pe"}, {"train.seed", "seed"}};
  auto shorten = [](const std::string& k) {
    if (const auto it = aliases.find(k); it != aliases.end()) return it->second;
    const auto dot = k.rfind('.');
    return dot == std::string::npos ? k : k.substr(dot + 1);
  };
  const std::string mine = shorten(key);
  for (const std::string& other : all_keys)
    if (other != key && shorten(other) == mine) return key;
  return mine;
}

std::vector<SweepPoint> expand_sweep(const SweepSpec& sweep) {
  std::vector<Settings> arms = grid_arms(sweep);
  arms.insert(arms.end(), sweep.runs.begin(), sweep.runs.end());

  std::vector<Settings> points;
  for (const Settings& arm : arms) {
    if (sweep.seeds.empty() || sets(arm, "train.seed")) {
      points.push_back(arm);
      continue;
    }
    for (const std::int64_t seed : sweep.seeds) {
      Settings s = arm;
      s.emplace_back("train.seed", std::to_string(seed));
      points.push_back(std::move(s));
    }
  }

  return name_points(std::move(points));
}

std::vector<SweepPoint> name_points(std::vector<std::vector<std::pair<std::string, std::string>>> points) {
  std::vector<std::string> keys;  // every swept key, for unambiguous short names
  std::set<std::string> seen;
  for (const Settings& p : points)
    for (const auto& [key, value] : p)
      if (seen.insert(key).second) keys.push_back(key);

  std::vector<SweepPoint> out;
  for (Settings& s : points) {
    std::string name;
    for (const auto& [key, value] : s) {
      if (!name.empty()) name += ',';
      name += short_key(key, keys) + "=" + name_value(value);
    }
    if (name.empty()) name = "base";
    if (name.size() > kMaxNameBytes) name.resize(kMaxNameBytes);
    out.push_back({std::move(s), std::move(name)});
  }
  return out;
}

}  // namespace ablate::spec
