#include "imgpipe/config.hpp"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace imgpipe {

ConfigError::ConfigError(std::string key, int line, const std::string& reason)
    : Error((key.empty() ? std::string("config") : "config key '" + key + "'") +
            (line > 0 ? " (line " + std::to_string(line) + ")" : std::string()) + ": " + reason),
      key_(std::move(key)),
      line_(line),
      reason_(reason) {}

namespace {

int line_of(const YAML::Node& n) { return n.Mark().is_null() ? 0 : n.Mark().line + 1; }

// Walks one YAML mapping: typed getters that name the key and line on error,
// and a final check that every key present was known.
class Section {
 public:
  Section(const YAML::Node& node, std::string path) : node_(node), path_(std::move(path)) {
    if (node_ && !node_.IsNull() && !node_.IsMap())
      throw ConfigError(path_, line_of(node_), "expected a mapping of keys");
    // yaml-cpp keeps both entries of a repeated key and lookups see only the
    // first: reject the repeat rather than silently ignore it.
    if (node_ && node_.IsMap()) {
      std::map<std::string, int> first_line;
      for (const auto& kv : node_) {
        const std::string k = kv.first.Scalar();
        const auto [it, inserted] = first_line.emplace(k, line_of(kv.first));
        if (!inserted)
          throw ConfigError(key(k), line_of(kv.first),
                            "duplicate key (first given on line " + std::to_string(it->second) + ")");
      }
    }
  }

  std::string key(const std::string& name) const { return path_.empty() ? name : path_ + "." + name; }

  YAML::Node get(const std::string& name) {
    known_.insert(name);
    if (!node_ || node_.IsNull()) return YAML::Node();
    return node_[name];
  }

  Section child(const std::string& name) { return Section(get(name), key(name)); }

  template <typename T>
  void read(const std::string& name, T& out) {
    YAML::Node n = get(name);
    if (!n || n.IsNull()) return;
    out = convert<T>(n, key(name));
  }

  void read_int(const std::string& name, int& out, long long lo, long long hi) {
    YAML::Node n = get(name);
    if (!n || n.IsNull()) return;
    const long long v = convert<long long>(n, key(name));
    if (v < lo || v > hi)
      throw ConfigError(key(name), line_of(n),
                        "value " + std::to_string(v) + " is out of range [" + std::to_string(lo) + ", " +
                            std::to_string(hi) + "]");
    out = static_cast<int>(v);
  }

  template <typename E>
  void read_enum(const std::string& name, E& out, std::initializer_list<std::pair<const char*, E>> values) {
    YAML::Node n = get(name);
    if (!n || n.IsNull()) return;
    const std::string s = convert<std::string>(n, key(name));
    std::string allowed;
    for (const auto& [text, value] : values) {
      if (s == text) {
        out = value;
        return;
      }
      allowed += allowed.empty() ? text : std::string(" | ") + text;
    }
    throw ConfigError(key(name), line_of(n), "unknown value '" + s + "' (expected " + allowed + ")");
  }

  void finish() const {
    if (!node_ || node_.IsNull()) return;
    for (const auto& kv : node_) {
      const std::string k = kv.first.Scalar();
      if (!known_.count(k)) {
        std::string allowed;
        for (const auto& a : known_) allowed += allowed.empty() ? a : ", " + a;
        throw ConfigError(key(k), line_of(kv.first), "unknown key (known keys here: " + allowed + ")");
      }
    }
  }

  template <typename T>
  static T convert(const YAML::Node& n, const std::string& key) {
    if constexpr (std::is_same_v<T, bool>) {
      if (!n.IsScalar()) throw ConfigError(key, line_of(n), "expected true or false");
      const std::string& s = n.Scalar();
      if (s == "true" || s == "True" || s == "yes" || s == "on") return true;
      if (s == "false" || s == "False" || s == "no" || s == "off") return false;
      throw ConfigError(key, line_of(n), "expected true or false, got '" + s + "'");
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!n.IsScalar()) throw ConfigError(key, line_of(n), "expected a string");
      return n.Scalar();
    } else if constexpr (std::is_integral_v<T>) {
      if (!n.IsScalar()) throw ConfigError(key, line_of(n), "expected an integer");
      const std::string& s = n.Scalar();
      T v{};
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc() || p != s.data() + s.size())
        throw ConfigError(key, line_of(n), "expected an integer, got '" + s + "'");
      return v;
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!n.IsScalar()) throw ConfigError(key, line_of(n), "expected a number");
      const std::string& s = n.Scalar();
      try {
        std::size_t used = 0;
        const double v = std::stod(s, &used);
        if (used != s.size() || !std::isfinite(v)) throw std::invalid_argument(s);
        return static_cast<T>(v);
      } catch (const std::exception&) {
        throw ConfigError(key, line_of(n), "expected a finite number, got '" + s + "'");
      }
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      std::vector<std::string> out;
      if (n.IsScalar()) {
        out.push_back(n.Scalar());
        return out;
      }
      if (!n.IsSequence()) throw ConfigError(key, line_of(n), "expected a list of strings");
      for (std::size_t i = 0; i < n.size(); ++i)
        out.push_back(convert<std::string>(n[i], key + "[" + std::to_string(i) + "]"));
      return out;
    } else {
      static_assert(sizeof(T) == 0, "unsupported config type");
    }
  }

 private:
  YAML::Node node_;
  std::string path_;
  std::set<std::string> known_;
};

void read_triple(Section& s, const std::string& name, std::array<float, 3>& out) {
  YAML::Node n = s.get(name);
  if (!n || n.IsNull()) return;
  const std::string key = s.key(name);
  if (!n.IsSequence()) throw ConfigError(key, line_of(n), "expected a list of 3 numbers (one per channel)");
  if (n.size() != 3)
    throw ConfigError(key, line_of(n),
                      "expected 3 values (one per channel R, G, B), got " + std::to_string(n.size()));
  for (std::size_t i = 0; i < 3; ++i)
    out[i] = Section::convert<float>(n[i], key + "[" + std::to_string(i) + "]");
}

Config parse(const YAML::Node& root) {
  Config c;
  if (!root || root.IsNull()) {
    c.validate();
    return c;
  }
  Section top(root, "");

  {
    Section s = top.child("input");
    s.read("paths", c.input.paths);
    s.read("recursive", c.input.recursive);
    s.read("extensions", c.input.extensions);
    s.read_enum("on_error", c.input.on_error, {{"skip", OnError::skip}, {"fail", OnError::fail}});
    s.read("list", c.input.list);
    s.read_int("loop", c.input.loop, 1, 1000000);
    {
      Section sh = s.child("shuffle");
      YAML::Node seed = sh.get("seed");
      if (seed && !seed.IsNull()) c.input.shuffle_seed = Section::convert<std::uint64_t>(seed, "input.shuffle.seed");
      sh.finish();
    }
    {
      Section sh = s.child("shard");
      sh.read_int("rank", c.input.shard.rank, 0, 1 << 20);
      sh.read_int("world_size", c.input.shard.world_size, 1, 1 << 20);
      const bool has_rank = c.input.shard.rank >= 0, has_size = c.input.shard.world_size > 0;
      if (has_rank != has_size)
        throw ConfigError(s.key("shard"), line_of(s.get("shard")), "give both rank and world_size (or neither)");
      if (has_rank && c.input.shard.rank >= c.input.shard.world_size)
        throw ConfigError(s.key("shard.rank"), line_of(sh.get("rank")),
                          "must be < world_size (" + std::to_string(c.input.shard.world_size) + ")");
      sh.finish();
    }
    {
      Section v = s.child("video");
      auto read64 = [&](const char* k, std::int64_t& out, long long lo) {
        YAML::Node n = v.get(k);
        if (!n || n.IsNull()) return;
        const long long x = Section::convert<long long>(n, v.key(k));
        if (x < lo) throw ConfigError(v.key(k), line_of(n), "must be >= " + std::to_string(lo));
        out = x;
      };
      read64("start", c.input.video.start, 0);
      read64("stride", c.input.video.stride, 1);
      read64("max_frames", c.input.video.max_frames, 0);
      v.finish();
    }
    s.finish();
  }
  {
    Section s = top.child("decode");
    YAML::Node t = s.get("threads");
    if (t && !t.IsNull()) {
      if (t.IsScalar() && t.Scalar() == "auto") c.decode.threads = 0;
      else {
        const long long v = Section::convert<long long>(t, "decode.threads");
        if (v < 1 || v > 1024)
          throw ConfigError("decode.threads", line_of(t), "must be auto or 1..1024, got " + std::to_string(v));
        c.decode.threads = static_cast<int>(v);
      }
    }
    s.read("accept_truncated", c.decode.accept_truncated);
    s.read_enum("reduced", c.decode.reduced, {{"auto", true}, {"off", false}});
    s.read("exif_orientation", c.decode.exif_orientation);
    YAML::Node mp = s.get("max_pixels");
    if (mp && !mp.IsNull()) {
      c.decode.max_pixels = Section::convert<long long>(mp, "decode.max_pixels");
      if (c.decode.max_pixels < 1) throw ConfigError("decode.max_pixels", line_of(mp), "must be >= 1");
    }
    s.finish();
  }
  {
    Section t = top.child("transform");
    {
      Section r = t.child("resize");
      r.read_int("width", c.transform.resize.width, 1, 16384);
      r.read_int("height", c.transform.resize.height, 1, 16384);
      r.read_enum("mode", c.transform.resize.mode,
                  {{"stretch", ResizeMode::stretch}, {"letterbox", ResizeMode::letterbox},
                   {"center_crop", ResizeMode::center_crop}});
      r.read_enum("interpolation", c.transform.resize.interpolation,
                  {{"linear", Interpolation::linear}, {"nearest", Interpolation::nearest},
                   {"area", Interpolation::area}, {"cubic", Interpolation::cubic}});
      r.read_int("pad_value", c.transform.resize.pad_value, 0, 255);
      r.read_enum("where", c.transform.resize.where,
                  {{"cpu", Where::cpu}, {"gpu", Where::gpu}, {"auto", Where::automatic}});
      r.finish();
    }
    {
      Section n = t.child("normalize");
      read_triple(n, "mean", c.transform.normalize.mean);
      read_triple(n, "std", c.transform.normalize.std);
      YAML::Node sd = n.get("std");
      for (int i = 0; i < 3; ++i)
        if (!(c.transform.normalize.std[i] > 0.0f))
          throw ConfigError("transform.normalize.std[" + std::to_string(i) + "]", sd ? line_of(sd) : 0,
                            "must be > 0");
      n.read("scale", c.transform.normalize.scale);
      if (!(c.transform.normalize.scale > 0.0f))
        throw ConfigError("transform.normalize.scale", line_of(n.get("scale")), "must be > 0");
      n.read_enum("where", c.transform.normalize.where,
                  {{"cpu", Where::cpu}, {"gpu", Where::gpu}, {"auto", Where::automatic}});
      n.finish();
    }
    t.read_enum("layout", c.transform.layout, {{"nchw", Layout::nchw}, {"nhwc", Layout::nhwc}});
    t.read_enum("dtype", c.transform.dtype,
                {{"float32", DType::float32}, {"float16", DType::float16}, {"uint8", DType::uint8}});
    bool rgb = true;
    t.read_enum("color", rgb, {{"rgb", true}, {"bgr", false}});
    c.transform.swap_rb = rgb;
    t.finish();
  }
  {
    Section s = top.child("batch");
    s.read_int("size", c.batch.size, 1, 65535);
    s.read("drop_last", c.batch.drop_last);
    s.finish();
  }
  {
    Section s = top.child("staging");
    s.read_int("slots", c.staging.slots, 2, 64);
    s.read_enum("memory", c.staging.memory,
                {{"write_combined", StagingMemory::write_combined}, {"pinned", StagingMemory::pinned},
                 {"pageable", StagingMemory::pageable}});
    s.read_enum("transfer", c.staging.transfer,
                {{"copy", Transfer::copy}, {"zero_copy", Transfer::zero_copy}, {"pageable", Transfer::pageable}});
    s.finish();
  }
  {
    Section s = top.child("memory");
    s.read_int("pinned_budget_mb", c.memory.pinned_budget_mb, 0, 1 << 24);
    s.read("fallback", c.memory.fallback);
    s.read("track", c.memory.track);
    s.finish();
  }
  top.read_enum("dispatch", c.dispatch,
                {{"round_robin", Dispatch::round_robin}, {"least_loaded", Dispatch::least_loaded}});
  {
    YAML::Node d = top.get("devices");
    if (d && !d.IsNull()) {
      if (d.IsSequence()) {
        c.devices.kind = DeviceSelection::Kind::list;
        if (d.size() == 0) throw ConfigError("devices", line_of(d), "the list of GPU ordinals is empty");
        for (std::size_t i = 0; i < d.size(); ++i) {
          const std::string k = "devices[" + std::to_string(i) + "]";
          const long long v = Section::convert<long long>(d[i], k);
          if (v < 0 || v > 1024) throw ConfigError(k, line_of(d[i]), "a GPU ordinal must be 0..1024");
          for (int seen : c.devices.ordinals)
            if (seen == v) throw ConfigError(k, line_of(d[i]), "GPU " + std::to_string(v) + " is listed twice");
          c.devices.ordinals.push_back(static_cast<int>(v));
        }
      } else if (!d.IsScalar()) {
        throw ConfigError("devices", line_of(d), "expected auto, cpu, all, a GPU ordinal or a list of ordinals");
      } else {
        try {
          c.devices = DeviceSelection::parse(d.Scalar());
        } catch (const ConfigError& e) {
          throw ConfigError("devices", line_of(d), e.reason());
        }
      }
    }
  }
  {
    Section s = top.child("sink");
    s.read_enum("type", c.sink.type, {{"discard", SinkType::discard}, {"dump", SinkType::dump}});
    s.read("dir", c.sink.dir);
    s.finish();
  }
  {
    Section s = top.child("pipeline");
    s.read_int("max_tokens", c.pipeline.max_tokens, 0, 4096);
    s.finish();
  }
  top.finish();
  c.validate();
  return c;
}

Config load(const std::function<YAML::Node()>& load_yaml) {
  YAML::Node root;
  try {
    root = load_yaml();
  } catch (const YAML::ParserException& e) {
    throw ConfigError("", e.mark.is_null() ? 0 : e.mark.line + 1, "malformed YAML: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw ConfigError("", e.mark.is_null() ? 0 : e.mark.line + 1, "YAML error: " + e.msg);
  }
  if (root && !root.IsNull() && !root.IsMap())
    throw ConfigError("", line_of(root), "the document must be a mapping of sections (input, decode, ...)");
  return parse(root);
}

const char* name(Where w) { return w == Where::cpu ? "cpu" : w == Where::gpu ? "gpu" : "auto"; }

}  // namespace

DeviceSelection DeviceSelection::parse(const std::string& text) {
  DeviceSelection d;
  if (text == "auto") return d;
  if (text == "cpu") {
    d.kind = Kind::cpu;
    return d;
  }
  if (text == "all") {
    d.kind = Kind::all;
    return d;
  }
  int v = -1;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < 0)
    throw ConfigError("devices", 0, "expected auto, cpu, all or a GPU ordinal >= 0, got '" + text + "'");
  d.kind = Kind::ordinal;
  d.ordinal = v;
  return d;
}

std::string DeviceSelection::to_string() const {
  switch (kind) {
    case Kind::automatic: return "auto";
    case Kind::cpu: return "cpu";
    case Kind::all: return "all";
    case Kind::ordinal: return std::to_string(ordinal);
    default: {
      std::string s = "[";
      for (std::size_t i = 0; i < ordinals.size(); ++i) s += (i ? ", " : "") + std::to_string(ordinals[i]);
      return s + "]";
    }
  }
}

Config Config::from_yaml_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw ConfigError("", 0, "cannot open config file '" + file.string() + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return from_yaml_string(ss.str());
  } catch (const ConfigError& e) {
    throw ConfigError(e.key(), e.line(), e.reason() + " [in " + file.string() + "]");
  }
}

Config Config::from_yaml_string(const std::string& yaml) {
  return load([&] { return YAML::Load(yaml); });
}

void Config::validate() const {
  if (batch.size < 1) throw ConfigError("batch.size", 0, "must be >= 1");
  if (staging.slots < 2) throw ConfigError("staging.slots", 0, "must be >= 2 (double buffering)");
  if (transform.resize.width < 1) throw ConfigError("transform.resize.width", 0, "must be >= 1");
  if (transform.resize.height < 1) throw ConfigError("transform.resize.height", 0, "must be >= 1");
  for (int i = 0; i < 3; ++i)
    if (!(transform.normalize.std[i] > 0.0f))
      throw ConfigError("transform.normalize.std[" + std::to_string(i) + "]", 0, "must be > 0");
  if (!(transform.normalize.scale > 0.0f)) throw ConfigError("transform.normalize.scale", 0, "must be > 0");
  for (std::size_t i = 0; i < input.extensions.size(); ++i) {
    const auto& e = input.extensions[i];
    if (e.size() < 2 || e[0] != '.')
      throw ConfigError("input.extensions[" + std::to_string(i) + "]", 0,
                        "must start with a dot, like .jpg (got '" + e + "')");
  }
  if (sink.type == SinkType::dump && sink.dir.empty()) throw ConfigError("sink.dir", 0, "must not be empty");
  if (input.loop < 1) throw ConfigError("input.loop", 0, "must be >= 1");
  if (input.video.stride < 1) throw ConfigError("input.video.stride", 0, "must be >= 1");
  if ((input.shard.rank >= 0) != (input.shard.world_size > 0))
    throw ConfigError("input.shard", 0, "give both rank and world_size (or neither)");
  if (input.shard.rank >= 0 && input.shard.rank >= input.shard.world_size)
    throw ConfigError("input.shard.rank", 0, "must be < world_size");
  if (transform.resize.where == Where::gpu) {
    if (transform.resize.interpolation != Interpolation::linear &&
        transform.resize.interpolation != Interpolation::nearest)
      throw ConfigError("transform.resize.where", 0,
                        "gpu resize supports interpolation linear and nearest only (area and cubic run on the cpu)");
    if (transform.normalize.where == Where::cpu)
      throw ConfigError("transform.resize.where", 0,
                        "gpu resize needs normalize.where gpu or auto (the GPU resizes, then normalises)");
  }
  const std::int64_t batch_bytes = static_cast<std::int64_t>(batch.size) * transform.resize.width *
                                   transform.resize.height * 3 * 4;
  if (batch_bytes > (std::int64_t{16} << 30))
    throw ConfigError("batch.size", 0, "one batch would need " + std::to_string(batch_bytes >> 20) +
                                           " MiB (limit 16 GiB): reduce batch.size or the resize target");
}

std::string Config::to_yaml() const {
  YAML::Emitter e;
  auto seq = [&](const auto& v) {
    e << YAML::Flow << YAML::BeginSeq;
    for (const auto& x : v) e << x;
    e << YAML::EndSeq;
  };
  e << YAML::BeginMap;
  e << YAML::Key << "input" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "paths" << YAML::Value;
  seq(input.paths);
  e << YAML::Key << "recursive" << YAML::Value << input.recursive;
  e << YAML::Key << "extensions" << YAML::Value;
  seq(input.extensions);
  e << YAML::Key << "on_error" << YAML::Value << (input.on_error == OnError::skip ? "skip" : "fail");
  e << YAML::Key << "list" << YAML::Value << input.list;
  e << YAML::Key << "loop" << YAML::Value << input.loop;
  e << YAML::Key << "shuffle" << YAML::Value << YAML::BeginMap;
  if (input.shuffle_seed) e << YAML::Key << "seed" << YAML::Value << *input.shuffle_seed;
  e << YAML::EndMap;
  e << YAML::Key << "shard" << YAML::Value << YAML::BeginMap;
  if (input.shard.rank >= 0) {
    e << YAML::Key << "rank" << YAML::Value << input.shard.rank;
    e << YAML::Key << "world_size" << YAML::Value << input.shard.world_size;
  }
  e << YAML::EndMap;
  e << YAML::Key << "video" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "start" << YAML::Value << input.video.start;
  e << YAML::Key << "stride" << YAML::Value << input.video.stride;
  e << YAML::Key << "max_frames" << YAML::Value << input.video.max_frames;
  e << YAML::EndMap;
  e << YAML::EndMap;
  e << YAML::Key << "decode" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "threads" << YAML::Value;
  if (decode.threads == 0) e << "auto";
  else e << decode.threads;
  e << YAML::Key << "accept_truncated" << YAML::Value << decode.accept_truncated;
  e << YAML::Key << "max_pixels" << YAML::Value << decode.max_pixels;
  e << YAML::Key << "reduced" << YAML::Value << (decode.reduced ? "auto" : "off");
  e << YAML::Key << "exif_orientation" << YAML::Value << decode.exif_orientation;
  e << YAML::EndMap;
  e << YAML::Key << "transform" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "resize" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "width" << YAML::Value << transform.resize.width;
  e << YAML::Key << "height" << YAML::Value << transform.resize.height;
  const char* modes[] = {"stretch", "letterbox", "center_crop"};
  const char* interps[] = {"linear", "nearest", "area", "cubic"};
  e << YAML::Key << "mode" << YAML::Value << modes[static_cast<int>(transform.resize.mode)];
  e << YAML::Key << "interpolation" << YAML::Value << interps[static_cast<int>(transform.resize.interpolation)];
  e << YAML::Key << "pad_value" << YAML::Value << transform.resize.pad_value;
  e << YAML::Key << "where" << YAML::Value << name(transform.resize.where);
  e << YAML::EndMap;
  e << YAML::Key << "normalize" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "mean" << YAML::Value;
  seq(transform.normalize.mean);
  e << YAML::Key << "std" << YAML::Value;
  seq(transform.normalize.std);
  e << YAML::Key << "scale" << YAML::Value << transform.normalize.scale;
  e << YAML::Key << "where" << YAML::Value << name(transform.normalize.where);
  e << YAML::EndMap;
  e << YAML::Key << "layout" << YAML::Value << std::string(to_string(transform.layout));
  e << YAML::Key << "dtype" << YAML::Value << std::string(to_string(transform.dtype));
  e << YAML::Key << "color" << YAML::Value << (transform.swap_rb ? "rgb" : "bgr");
  e << YAML::EndMap;
  e << YAML::Key << "batch" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "size" << YAML::Value << batch.size;
  e << YAML::Key << "drop_last" << YAML::Value << batch.drop_last;
  e << YAML::EndMap;
  const char* mems[] = {"write_combined", "pinned", "pageable"};
  e << YAML::Key << "staging" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "slots" << YAML::Value << staging.slots;
  e << YAML::Key << "memory" << YAML::Value << mems[static_cast<int>(staging.memory)];
  const char* transfers[] = {"copy", "zero_copy", "pageable"};
  e << YAML::Key << "transfer" << YAML::Value << transfers[static_cast<int>(staging.transfer)];
  e << YAML::EndMap;
  e << YAML::Key << "memory" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "pinned_budget_mb" << YAML::Value << memory.pinned_budget_mb;
  e << YAML::Key << "fallback" << YAML::Value << memory.fallback;
  e << YAML::Key << "track" << YAML::Value << memory.track;
  e << YAML::EndMap;
  e << YAML::Key << "dispatch" << YAML::Value << (dispatch == Dispatch::round_robin ? "round_robin" : "least_loaded");
  e << YAML::Key << "devices" << YAML::Value;
  if (devices.kind == DeviceSelection::Kind::list) {
    e << YAML::Flow << YAML::BeginSeq;
    for (int o : devices.ordinals) e << o;
    e << YAML::EndSeq;
  } else {
    e << devices.to_string();
  }
  e << YAML::Key << "sink" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "type" << YAML::Value << (sink.type == SinkType::discard ? "discard" : "dump");
  e << YAML::Key << "dir" << YAML::Value << sink.dir;
  e << YAML::EndMap;
  e << YAML::Key << "pipeline" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "max_tokens" << YAML::Value << pipeline.max_tokens;
  e << YAML::EndMap;
  e << YAML::EndMap;
  return e.c_str();
}

}  // namespace imgpipe
