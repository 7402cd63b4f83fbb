// The dump sink's folder: where a process writes, and the check, before a
// run starts, that no earlier run's output is in the way (or, with
// sink.overwrite, its removal).
//
// One process: sink.dir itself. One of W > 1 ranks (the ShardSpec that cut
// the input: input.shard, else the launcher's environment): its own
// sub-folder sink.dir/rank_R_of_W, laid out as a single process's folder, so
// that no two ranks ever write the same file.
//
// The files imgpipe writes, and the only ones sink.overwrite removes:
// regular files named batch_NNNNNN.npy (six or more digits) and
// manifest.jsonl, in sink.dir or in a rank_R_of_W sub-folder of it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "imgpipe/config.hpp"
#include "input_order.hpp"

namespace imgpipe::stages {

// "rank_R_of_W".
std::string rank_folder_name(int rank, int world_size);

// sink.dir for one process (world_size 1), else sink.dir/rank_R_of_W.
std::filesystem::path dump_folder(const std::string& dir, const ShardSpec& shard);

// What prepare_dump_folder() did.
struct DumpFolder {
  std::filesystem::path path;                  // where this process writes; exists on return
  std::vector<std::filesystem::path> removed;  // earlier runs' files removed (sink.overwrite)
  std::vector<std::filesystem::path> kept;     // entries in the way that are not imgpipe's (sink.overwrite)
};

// Makes the folder this process writes into. Earlier output is in the way
// when
//  - one process: sink.dir holds anything;
//  - rank R of W: sink.dir/rank_R_of_W holds anything, or sink.dir holds
//    anything beside the other ranks' sub-folders rank_r_of_W (which may be
//    this run's, being written at this moment: a rank never looks inside
//    them, nor removes them).
// Without sink.overwrite that throws ConfigError (key sink.dir) naming the
// folder, what is in it and sink.overwrite. With it, the imgpipe files in
// the way are removed and logged: rank R its own sub-folder's; a single
// process, or rank 0, also those in sink.dir and in sub-folders of another
// number of ranks (whose emptied sub-folders go too). Everything else stays
// (logged). Throws ConfigError (key sink.dir) when the folder cannot be
// listed, made or written into; Error when a file cannot be removed.
DumpFolder prepare_dump_folder(const SinkConfig& cfg, const ShardSpec& shard);

}  // namespace imgpipe::stages
