// The order of the input list after discovery: repeat (input.loop), shuffle
// with a seed (input.shuffle), then take this process's shard (input.shard or
// the launcher's environment). Deterministic on every platform: the shuffle is
// our own Fisher-Yates over a std::mt19937_64 (std::shuffle's algorithm is
// implementation-defined), so every rank computes the same permutation and
// the shards are disjoint and cover the input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "imgpipe/config.hpp"
#include "stage.hpp"

namespace imgpipe::stages {

struct ShardSpec {
  int rank = 0;
  int world_size = 1;
  std::string origin = "default";  // "config", "RANK/WORLD_SIZE", "OMPI_COMM_WORLD_*", "SLURM_*", "PMI_*"
};

// From the variables standard launchers set (torchrun, mpirun, srun), in that
// order of precedence; nullopt when none is set. Throws imgpipe::Error when a
// variable is set but malformed or inconsistent (rank >= size).
std::optional<ShardSpec> shard_from_environment();

// This process's shard: input.shard when set, else shard_from_environment(),
// else the whole input (rank 0 of 1). The input list and the dump sink's
// folder both follow it. Throws imgpipe::Error as shard_from_environment().
ShardSpec shard_of(const InputConfig& cfg);

// LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK or SLURM_LOCALID; nullopt when none.
std::optional<int> local_rank_from_environment();

// Reads input.list: one path per line; blank lines and lines starting with #
// are ignored; relative paths resolve against the list file's folder (stream
// URLs and cameras are taken as written).
// Throws imgpipe::Error naming the file when it cannot be read.
std::vector<std::string> read_input_list(const std::string& list_file);

// How an epoch's list is ordered and split (InputConfig's keys).
struct OrderSpec {
  int loop = 1;
  std::optional<std::uint64_t> seed;  // none: discovery order
  std::uint64_t epoch = 0;
  bool every_epoch = true;             // a permutation per epoch (else the seed's for every epoch)
  ShardRemainder remainder = ShardRemainder::uneven;
};

// What order_inputs did with the remainder on this rank: items repeated
// (pad) or left out (drop) over every rank, and this rank's share of them.
struct OrderFigures {
  std::size_t padded = 0, dropped = 0;
};

// The seed of an epoch's permutation: `seed` itself for epoch 0 (the one
// order of input.shuffle's seed before epochs existed), a mix of both after.
std::uint64_t epoch_seed(std::uint64_t seed, std::uint64_t epoch) noexcept;

// loop >= 1 copies of the list, shuffled when seed is set (with
// epoch_seed(seed, epoch) when every_epoch), the remainder dealt with, then
// every item i with i % world_size == rank.
std::vector<InputItem> order_inputs(std::vector<InputItem> items, const OrderSpec& order, const ShardSpec& shard,
                                    OrderFigures* figures = nullptr);

}  // namespace imgpipe::stages
