// Input discovery: input.paths (files, folders, glob patterns) and
// input.list into the ordered input list the source stage hands out, and
// the check a run makes of input.paths before any work starts.
//
// Discovery order is stable: paths in config order, then the entries of
// input.list; inside a folder, entries sorted by name (byte order),
// recursively when input.recursive. Folders contribute files whose extension
// is in input.extensions (case-insensitive); files named explicitly are always
// taken. A path that does not exist, or a folder that cannot be listed,
// becomes a failed item with the reason (a run checks input.paths first with
// check_inputs(), so there this applies to the entries of input.list and to
// what changes after the check). Stream URLs and cameras (live_input.hpp)
// are taken as named, as videos. Duplicates (the same file reached
// twice) are delivered once. The list is then repeated (input.loop), shuffled
// (input.shuffle) and sharded (input.shard or the launcher's environment): see
// input_order.hpp.
#pragma once

#include <string>
#include <vector>

#include "imgpipe/config.hpp"
#include "input_order.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

// Discovery of cfg.paths alone (no list file, loop, shuffle or shard). Items
// are not marked as videos. With cfg.labels folders each item found in a
// class folder is labelled (config_keys.cpp, input.labels, has the rule) and
// `classes`, when given, receives the class names in index order. Throws
// imgpipe::Error for a glob that cannot be expanded.
std::vector<InputItem> discover_inputs(const InputConfig& cfg, std::vector<std::string>* classes = nullptr);

// Run before any work starts (the pipeline: before it touches a GPU): every
// entry of cfg.paths exists and every pattern matches something, cfg.list (when
// set) can be read, and discovery would find at least one item, a file or a
// failure it reports (looking only as far as the first, so a large folder
// costs little). Throws ConfigError with key "input.paths" naming every path
// that does not exist and every pattern that matches nothing (a relative one
// with the current directory it resolved against), with key "input.list" when
// the list file cannot be read, and with key "input.paths" when no input would
// be found (both empty, or folders without a file of input.extensions).
// Entries of the list file are not checked: a missing one is a failed item.
void check_inputs(const InputConfig& cfg);

// discover_inputs(paths + the entries of input.list), every good item with a
// video extension marked `video`: the whole input before loop, shuffle and
// shard. Throws imgpipe::Error when the list file cannot be read.
std::vector<InputItem> discover_all_inputs(const InputConfig& cfg, std::vector<std::string>* classes = nullptr);

// The input list of this process and the shard it was cut with.
struct InputList {
  std::vector<InputItem> items;
  ShardSpec shard;
  std::vector<std::string> classes;  // input.labels: folders: the class names, in index order
  std::uint64_t epoch = 0;           // the epoch it was ordered for
  OrderFigures remainder;            // input.shard_remainder's padding or dropping
};

// discover_all_inputs(), then order_inputs() for `epoch` with input.loop,
// input.shuffle, input.shard_remainder and the shard of input.shard, else
// shard_from_environment(), else the whole list. Throws imgpipe::Error when
// the list file cannot be read or the launcher's environment is malformed.
InputList build_input_list(const InputConfig& cfg, std::uint64_t epoch = 0);

}  // namespace imgpipe::stages
