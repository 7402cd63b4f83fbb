// The input list after discovery: input.list files, loop, the seeded shuffle,
// shards (from config and from the launchers' environment variables) and
// build_input_list(), which puts them together.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "imgpipe/error.hpp"
#include "stages/input_order.hpp"
#include "stages/source.hpp"

namespace fs = std::filesystem;
using imgpipe::InputConfig;
using imgpipe::stages::build_input_list;
using imgpipe::stages::InputItem;
using imgpipe::stages::order_inputs;
using imgpipe::stages::read_input_list;
using imgpipe::stages::shard_from_environment;
using imgpipe::stages::ShardSpec;
using imgpipe::test::TempDir;

namespace {

// input.loop and input.shuffle's seed alone (epoch 0, the remainder uneven).
std::vector<InputItem> ordered(const std::vector<InputItem>& items, int loop, std::optional<std::uint64_t> seed,
                               const ShardSpec& shard) {
  imgpipe::stages::OrderSpec o;
  o.loop = loop;
  o.seed = seed;
  return order_inputs(items, o, shard);
}

std::vector<InputItem> numbered(int n) {
  std::vector<InputItem> v;
  for (int i = 0; i < n; ++i) v.push_back({"item_" + std::to_string(i), -1, {}, false});
  return v;
}

std::vector<std::string> paths_of(const std::vector<InputItem>& v) {
  std::vector<std::string> p;
  for (const auto& i : v) p.push_back(i.path);
  return p;
}

// Clears every launcher variable for the scope, restoring them afterwards.
class EnvGuard {
 public:
  EnvGuard() {
    for (const auto& name : imgpipe::test::launcher_variables()) {
      if (const char* v = std::getenv(name.c_str())) saved_.emplace_back(name, v);
      ::unsetenv(name.c_str());
    }
  }
  ~EnvGuard() {
    for (const auto& name : imgpipe::test::launcher_variables()) ::unsetenv(name.c_str());
    for (const auto& [n, v] : saved_) ::setenv(n.c_str(), v.c_str(), 1);
  }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;
  void set(const char* name, const char* value) { ::setenv(name, value, 1); }

 private:
  std::vector<std::pair<std::string, std::string>> saved_;
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const imgpipe::Error& e) {
    return e.what();
  }
  return {};
}

void touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "x";
}

}  // namespace

TEST_CASE("input order: the shards of every world size are disjoint and together are the whole list") {
  const auto items = numbered(53);
  for (const std::optional<std::uint64_t> seed : {std::optional<std::uint64_t>{}, std::optional<std::uint64_t>{1},
                                                  std::optional<std::uint64_t>{0xC0FFEE}}) {
    for (const int loop : {1, 3}) {
      const auto whole = ordered(items, loop, seed, ShardSpec{0, 1, "default"});
      REQUIRE(whole.size() == items.size() * static_cast<std::size_t>(loop));
      for (const int world : {1, 2, 3, 4, 7, 16, 53, 200}) {
        CAPTURE(seed.value_or(0));
        CAPTURE(loop);
        CAPTURE(world);
        // Every position of the whole list lands in exactly one shard: rank
        // r holds positions r, r + world, r + 2 world, ...
        std::vector<int> taken(whole.size(), 0);
        std::size_t total = 0;
        for (int rank = 0; rank < world; ++rank) {
          const auto mine = ordered(items, loop, seed, ShardSpec{rank, world, "test"});
          total += mine.size();
          for (std::size_t k = 0; k < mine.size(); ++k) {
            const std::size_t pos = static_cast<std::size_t>(rank) + k * static_cast<std::size_t>(world);
            REQUIRE(pos < whole.size());
            CHECK(mine[k].path == whole[pos].path);
            ++taken[pos];
          }
        }
        CHECK(total == whole.size());
        CHECK(std::count(taken.begin(), taken.end(), 1) == static_cast<std::ptrdiff_t>(whole.size()));
        // Shard sizes differ by at most one.
        const auto first = ordered(items, loop, seed, ShardSpec{0, world, "test"}).size();
        const auto last = ordered(items, loop, seed, ShardSpec{world - 1, world, "test"}).size();
        CHECK(first - last <= 1);
      }
      // Without loop, the union of the paths is the input, each once.
      if (loop == 1) {
        std::multiset<std::string> u;
        for (int rank = 0; rank < 5; ++rank)
          for (const auto& p : paths_of(ordered(items, 1, seed, ShardSpec{rank, 5, "test"}))) u.insert(p);
        const auto all = paths_of(items);
        CHECK(u == std::multiset<std::string>(all.begin(), all.end()));
      }
    }
  }
}

TEST_CASE("input order: the shuffle is a deterministic permutation, the same on every platform") {
  const auto items = numbered(10);
  const auto a = paths_of(ordered(items, 1, 42, {}));
  const auto b = paths_of(ordered(items, 1, 42, {}));
  const auto c = paths_of(ordered(items, 1, 43, {}));
  CHECK(a == b);
  CHECK(a != c);
  CHECK(a != paths_of(items));
  std::set<std::string> s(a.begin(), a.end());
  CHECK(s.size() == 10);
  CHECK(*s.begin() == "item_0");
  // Our own Fisher-Yates over std::mt19937_64 (whose output the standard
  // fixes): every rank of a job, whatever its standard library, computes this
  // permutation for seed 42.
  CHECK(a == std::vector<std::string>{"item_1", "item_7", "item_9", "item_0", "item_3", "item_8", "item_4", "item_2",
                                      "item_5", "item_6"});
  // Loop then shuffle: the copies are mixed, each item still `loop` times.
  const auto looped = paths_of(ordered(items, 3, 7, {}));
  std::map<std::string, int> count;
  for (const auto& p : looped) ++count[p];
  CHECK(count.size() == 10);
  for (const auto& [p, n] : count) CHECK(n == 3);
  CHECK(std::vector<std::string>(looped.begin(), looped.begin() + 10) != paths_of(items));
}

TEST_CASE("input order: loop repeats the list in order, and no seed keeps discovery order") {
  const auto items = numbered(4);
  CHECK(paths_of(ordered(items, 1, std::nullopt, {})) == paths_of(items));
  const auto three = paths_of(ordered(items, 3, std::nullopt, {}));
  REQUIRE(three.size() == 12);
  for (std::size_t i = 0; i < 12; ++i) CHECK(three[i] == "item_" + std::to_string(i % 4));
  CHECK(ordered(items, 0, std::nullopt, {}).size() == 4);  // loop < 1 counts as 1
}

TEST_CASE("input order: the shard from each launcher's environment variables, in order of precedence") {
  EnvGuard env;
  CHECK_FALSE(shard_from_environment().has_value());

  env.set("SLURM_PROCID", "3");
  env.set("SLURM_NTASKS", "8");
  auto s = shard_from_environment();
  REQUIRE(s);
  CHECK(s->rank == 3);
  CHECK(s->world_size == 8);
  CHECK(s->origin == "SLURM_*");

  env.set("OMPI_COMM_WORLD_RANK", "1");
  env.set("OMPI_COMM_WORLD_SIZE", "2");
  s = shard_from_environment();
  REQUIRE(s);
  CHECK(s->rank == 1);
  CHECK(s->world_size == 2);
  CHECK(s->origin == "OMPI_COMM_WORLD_*");

  env.set("RANK", "0");
  env.set("WORLD_SIZE", "4");
  s = shard_from_environment();
  REQUIRE(s);
  CHECK(s->rank == 0);
  CHECK(s->world_size == 4);
  CHECK(s->origin == "RANK/WORLD_SIZE");

  env.set("LOCAL_RANK", "2");
  CHECK(imgpipe::stages::local_rank_from_environment() == std::optional<int>(2));
}

TEST_CASE("input order: malformed launcher variables are clear errors naming the variable") {
  struct Case {
    std::vector<std::pair<const char*, const char*>> vars;
    std::vector<std::string> expect;  // substrings of the message
  };
  const std::vector<Case> cases{
      {{{"RANK", "one"}, {"WORLD_SIZE", "4"}}, {"RANK", "'one'", "not an integer"}},
      {{{"RANK", "1"}, {"WORLD_SIZE", "4x"}}, {"WORLD_SIZE", "not an integer"}},
      {{{"RANK", "4"}, {"WORLD_SIZE", "4"}}, {"RANK=4", "WORLD_SIZE=4", "0 <= rank < size"}},
      {{{"RANK", "-1"}, {"WORLD_SIZE", "4"}}, {"0 <= rank < size"}},
      {{{"RANK", "0"}, {"WORLD_SIZE", "0"}}, {"0 <= rank < size"}},
      {{{"RANK", "2"}}, {"only one of RANK and WORLD_SIZE"}},
      {{{"OMPI_COMM_WORLD_SIZE", "2"}}, {"OMPI_COMM_WORLD_RANK"}},
      {{{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "2"}}, {"SLURM_PROCID=5"}},
      {{{"SLURM_PROCID", ""}, {"SLURM_NTASKS", "2"}}, {"only one of SLURM_PROCID and SLURM_NTASKS"}},
  };
  for (const auto& c : cases) {
    EnvGuard env;
    for (const auto& [n, v] : c.vars) env.set(n, v);
    const std::string msg = error_of([] { (void)shard_from_environment(); });
    CAPTURE(msg);
    REQUIRE_FALSE(msg.empty());
    for (const auto& e : c.expect) CHECK(msg.find(e) != std::string::npos);
    // The same error from build_input_list, before any work is done.
    InputConfig cfg;
    cfg.paths = {imgpipe::test::sample_dir().string()};
    CHECK(error_of([&] { (void)build_input_list(cfg); }) == msg);
  }
}

TEST_CASE("input order: input.list reads one path a line (comments, blanks, CRLF), relative to the list's folder") {
  TempDir d;
  fs::create_directories(d / "lists");
  {
    std::ofstream f(d / "lists" / "inputs.txt");
    f << "# training set\n"
      << "\n"
      << "a.jpg\n"
      << "  sub/b.png  \r\n"
      << "\t# indented comment\n"
      << (d / "abs.jpg").string() << "\n"
      << "../up.jpg";  // no final newline
  }
  const auto v = read_input_list((d / "lists" / "inputs.txt").string());
  const fs::path base = d / "lists";
  CHECK(v == std::vector<std::string>{(base / "a.jpg").string(), (base / "sub/b.png").string(),
                                      (d / "abs.jpg").string(), (base / "../up.jpg").string()});
  const std::string msg = error_of([&] { (void)read_input_list((d / "missing.txt").string()); });
  CHECK(msg.find("input.list") != std::string::npos);
  CHECK(msg.find("missing.txt") != std::string::npos);
}

TEST_CASE("input order: build_input_list = paths + list entries, videos marked, then loop, shuffle and shard") {
  EnvGuard env;
  TempDir d;
  touch(d / "dir" / "a.jpg");
  touch(d / "dir" / "b.png");
  touch(d / "dir" / "clip.AVI");
  touch(d / "dir" / "notes.txt");
  touch(d / "extra" / "c.jpg");
  touch(d / "extra" / "movie.mp4");
  {
    std::ofstream f(d / "list.txt");
    f << "extra/c.jpg\nextra/movie.mp4\ndir/a.jpg\nmissing.jpg\n";  // dir/a.jpg again: delivered once
  }
  InputConfig cfg;
  cfg.paths = {(d / "dir").string()};
  cfg.list = (d / "list.txt").string();
  auto rel = [&](const InputItem& i) { return fs::path(i.path).lexically_normal().lexically_relative(d.path()).generic_string(); };

  const auto all = build_input_list(cfg);
  CHECK(all.shard.rank == 0);
  CHECK(all.shard.world_size == 1);
  CHECK(all.shard.origin == "default");
  std::vector<std::string> names;
  std::vector<bool> video;
  for (const auto& i : all.items) {
    names.push_back(rel(i));
    video.push_back(i.video);
  }
  CHECK(names == std::vector<std::string>{"dir/a.jpg", "dir/b.png", "dir/clip.AVI", "extra/c.jpg", "extra/movie.mp4",
                                          "missing.jpg"});
  CHECK(video == std::vector<bool>{false, false, true, false, true, false});
  CHECK_FALSE(all.items.back().error.empty());  // the missing entry is a failed item, in its place

  // Loop and shuffle: deterministic.
  cfg.loop = 2;
  cfg.shuffle_seed = 5;
  const auto s1 = build_input_list(cfg);
  const auto s2 = build_input_list(cfg);
  CHECK(s1.items.size() == 12);
  CHECK(paths_of(s1.items) == paths_of(s2.items));

  // The shard from the environment, then from the config (which wins).
  env.set("WORLD_SIZE", "3");
  env.set("RANK", "2");
  const auto e = build_input_list(cfg);
  CHECK(e.shard.rank == 2);
  CHECK(e.shard.world_size == 3);
  CHECK(e.shard.origin == "RANK/WORLD_SIZE");
  CHECK(paths_of(e.items) == std::vector<std::string>{s1.items[2].path, s1.items[5].path, s1.items[8].path,
                                                      s1.items[11].path});
  cfg.shard = {1, 4};
  const auto c = build_input_list(cfg);
  CHECK(c.shard.rank == 1);
  CHECK(c.shard.world_size == 4);
  CHECK(c.shard.origin == "config");
  CHECK(paths_of(c.items) == std::vector<std::string>{s1.items[1].path, s1.items[5].path, s1.items[9].path});

  cfg.list = (d / "nope.txt").string();
  CHECK(error_of([&] { (void)build_input_list(cfg); }).find("nope.txt") != std::string::npos);
}

TEST_CASE("input order: each epoch has its own permutation, the same on every rank, and every_epoch false keeps one") {
  const auto items = numbered(50);
  imgpipe::stages::OrderSpec o;
  o.seed = 42;
  const auto epoch_order = [&](std::uint64_t e, const ShardSpec& shard = {}) {
    o.epoch = e;
    return paths_of(order_inputs(items, o, shard));
  };
  // Epoch 0 is the seed's one order (what input.shuffle gave before epochs).
  CHECK(epoch_order(0) == paths_of(ordered(items, 1, 42, {})));
  const auto e1 = epoch_order(1), e2 = epoch_order(2);
  CHECK(e1 != epoch_order(0));
  CHECK(e2 != e1);
  CHECK(epoch_order(1) == e1);  // reproducible
  CHECK(std::set<std::string>(e1.begin(), e1.end()).size() == 50);
  // Nearby seeds and epochs give unrelated orders (not shifted copies).
  CHECK(imgpipe::stages::epoch_seed(42, 1) != imgpipe::stages::epoch_seed(43, 1));
  CHECK(imgpipe::stages::epoch_seed(42, 1) != imgpipe::stages::epoch_seed(42, 2));
  CHECK(imgpipe::stages::epoch_seed(42, 0) == 42);
  // 4 ranks of epoch 3: disjoint, together the whole input, as the whole order dealt out.
  const auto whole = epoch_order(3);
  std::multiset<std::string> u;
  for (int rank = 0; rank < 4; ++rank) {
    const auto mine = epoch_order(3, ShardSpec{rank, 4, "test"});
    for (std::size_t k = 0; k < mine.size(); ++k) CHECK(mine[k] == whole[static_cast<std::size_t>(rank) + 4 * k]);
    u.insert(mine.begin(), mine.end());
  }
  const auto all = paths_of(items);
  CHECK(u == std::multiset<std::string>(all.begin(), all.end()));
  // every_epoch false: the seed's order every epoch.
  o.every_epoch = false;
  CHECK(epoch_order(5) == epoch_order(0));
}

TEST_CASE("input order: the remainder is spread (uneven), padded from the epoch's start (pad) or left out (drop)") {
  using imgpipe::ShardRemainder;
  for (const int n : {1, 10, 13, 20}) {
    const auto items = numbered(n);
    for (const int world : {1, 3, 4, 7, 16}) {
      CAPTURE(n);
      CAPTURE(world);
      imgpipe::stages::OrderSpec o;
      o.seed = 9;
      o.epoch = 2;
      const auto whole = paths_of(order_inputs(items, o, {}));
      for (const ShardRemainder r : {ShardRemainder::uneven, ShardRemainder::pad, ShardRemainder::drop}) {
        CAPTURE(static_cast<int>(r));
        o.remainder = r;
        std::map<std::string, int> seen;
        std::vector<std::size_t> sizes;
        std::size_t padded = 0, dropped = 0;
        for (int rank = 0; rank < world; ++rank) {
          imgpipe::stages::OrderFigures f;
          const auto mine = paths_of(order_inputs(items, o, ShardSpec{rank, world, "test"}, &f));
          sizes.push_back(mine.size());
          for (const auto& p : mine) ++seen[p];
          padded = f.padded;
          dropped = f.dropped;
        }
        const std::size_t extra = world > 1 ? static_cast<std::size_t>(n % world) : 0;
        const auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
        if (r == ShardRemainder::uneven || extra == 0) {
          CHECK(*hi - *lo <= 1);
          CHECK(seen.size() == static_cast<std::size_t>(n));  // each once
          for (const auto& [p, k] : seen) CHECK(k == 1);
          CHECK(padded + dropped == 0);
        } else if (r == ShardRemainder::pad) {
          CHECK(*hi == *lo);  // every rank as many
          CHECK(padded == static_cast<std::size_t>(world) - extra);
          CHECK(seen.size() == static_cast<std::size_t>(n));  // nothing lost
          int twice = 0;
          for (const auto& [p, k] : seen) twice += k - 1;
          CHECK(twice == static_cast<int>(padded));
          // The repeated ones are the first of the epoch's order.
          for (std::size_t i = 0; i < padded; ++i) CHECK(seen[whole[i % whole.size()]] >= 2);
        } else {
          CHECK(*hi == *lo);
          CHECK(dropped == extra);
          CHECK(seen.size() == static_cast<std::size_t>(n) - extra);
          for (std::size_t i = whole.size() - extra; i < whole.size(); ++i) CHECK(seen.count(whole[i]) == 0);
        }
      }
    }
  }
}
