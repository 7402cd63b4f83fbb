#include "input_order.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "imgpipe/error.hpp"
#include "live_input.hpp"

namespace imgpipe::stages {

namespace {

std::optional<long long> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  long long x = 0;
  const char* end = v + std::char_traits<char>::length(v);
  auto [p, ec] = std::from_chars(v, end, x);
  if (ec != std::errc() || p != end) throw Error(std::string("environment variable ") + name + "='" + v + "' is not an integer");
  return x;
}

std::optional<ShardSpec> pair(const char* rank_var, const char* size_var, const char* origin) {
  const auto r = env_int(rank_var);
  const auto s = env_int(size_var);
  if (!r && !s) return std::nullopt;
  if (!r || !s) throw Error(std::string("environment sets only one of ") + rank_var + " and " + size_var);
  if (*s < 1 || *r < 0 || *r >= *s)
    throw Error(std::string("environment ") + rank_var + "=" + std::to_string(*r) + ", " + size_var + "=" +
                std::to_string(*s) + ": need 0 <= rank < size");
  return ShardSpec{static_cast<int>(*r), static_cast<int>(*s), origin};
}

}  // namespace

std::optional<ShardSpec> shard_from_environment() {
  if (auto s = pair("RANK", "WORLD_SIZE", "RANK/WORLD_SIZE")) return s;
  if (auto s = pair("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_*")) return s;
  if (auto s = pair("SLURM_PROCID", "SLURM_NTASKS", "SLURM_*")) return s;
  if (auto s = pair("PMI_RANK", "PMI_SIZE", "PMI_*")) return s;
  return std::nullopt;
}

ShardSpec shard_of(const InputConfig& cfg) {
  if (cfg.shard.rank >= 0) return ShardSpec{cfg.shard.rank, cfg.shard.world_size, "config"};
  if (auto env = shard_from_environment()) return *env;
  return ShardSpec{};
}

std::optional<int> local_rank_from_environment() {
  for (const char* v : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"}) {
    if (auto x = env_int(v)) {
      if (*x < 0) throw Error(std::string("environment variable ") + v + " is negative");
      return static_cast<int>(*x);
    }
  }
  return std::nullopt;
}

std::vector<std::string> read_input_list(const std::string& list_file) {
  std::ifstream in(list_file);
  if (!in) throw Error("input.list: cannot read '" + list_file + "'");
  const std::filesystem::path base = std::filesystem::path(list_file).parent_path();
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    std::size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] == '#') continue;
    std::filesystem::path p(line.substr(b));
    const bool as_written = p.is_absolute() || base.empty() || is_live_input(p.string());  // URLs, cameras
    out.push_back(as_written ? p.string() : (base / p).string());
  }
  return out;
}

std::uint64_t epoch_seed(std::uint64_t seed, std::uint64_t epoch) noexcept {
  if (epoch == 0) return seed;
  // SplitMix64's finaliser over the pair: nearby seeds and epochs give
  // unrelated generator states.
  auto mix = [](std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  return mix(seed ^ mix(epoch + 0x9e3779b97f4a7c15ULL));
}

std::vector<InputItem> order_inputs(std::vector<InputItem> items, const OrderSpec& order, const ShardSpec& shard,
                                    OrderFigures* figures) {
  const int loop = std::max(1, order.loop);
  std::vector<InputItem> all;
  all.reserve(items.size() * static_cast<std::size_t>(loop));
  for (int l = 0; l + 1 < loop; ++l) all.insert(all.end(), items.begin(), items.end());
  all.insert(all.end(), std::make_move_iterator(items.begin()), std::make_move_iterator(items.end()));
  for (std::size_t i = 0; i < all.size(); ++i) all[i].id = i;
  if (order.seed) {
    std::mt19937_64 rng(order.every_epoch ? epoch_seed(*order.seed, order.epoch) : *order.seed);
    for (std::size_t i = all.size(); i > 1; --i) {
      // Uniform j in [0, i) by rejection: identical on every platform.
      const std::uint64_t bound = i, limit = UINT64_MAX - UINT64_MAX % bound;
      std::uint64_t x;
      do x = rng(); while (x >= limit);
      std::swap(all[i - 1], all[x % bound]);
    }
  }
  if (shard.world_size <= 1) return all;
  const auto world = static_cast<std::size_t>(shard.world_size);
  const std::size_t extra = all.size() % world;
  if (extra != 0 && !all.empty() && order.remainder == ShardRemainder::pad) {
    const std::size_t pad = world - extra;  // from the start of the order, again and again if it is short
    for (std::size_t i = 0; i < pad; ++i) all.push_back(all[i % all.size()]);
    if (figures) figures->padded = pad;
  } else if (extra != 0 && order.remainder == ShardRemainder::drop) {
    all.resize(all.size() - extra);
    if (figures) figures->dropped = extra;
  }
  std::vector<InputItem> mine;
  mine.reserve(all.size() / shard.world_size + 1);
  for (std::size_t i = static_cast<std::size_t>(shard.rank); i < all.size(); i += shard.world_size)
    mine.push_back(std::move(all[i]));
  return mine;
}

}  // namespace imgpipe::stages
