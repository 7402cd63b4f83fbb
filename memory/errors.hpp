// Errors of the memory layer's composed resources, and the byte formatting
// their messages share.
#pragma once

#include <cstddef>
#include <string>

#include "imgpipe/error.hpp"
#include "imgpipe/memory/resources.hpp"

namespace imgpipe::memory {

// "1.5 MiB", "12.0 KiB", "100 B".
std::string human_bytes(std::size_t bytes);

// A LimitingAdaptor refused a request: `requested` more bytes would pass the
// `limit` with `held` bytes already allocated through it. The message names
// all three numbers, in bytes and readable units.
class BudgetError : public Error {
 public:
  BudgetError(std::size_t limit, std::size_t held, std::size_t requested);
  std::size_t limit() const noexcept { return limit_; }
  std::size_t held() const noexcept { return held_; }
  std::size_t requested() const noexcept { return requested_; }

 private:
  std::size_t limit_, held_, requested_;
};

// No memory from a FallbackResource: with fallback off, its first step
// failed; with fallback on, every step failed. Names the resource, the kind
// asked for, the size and why (`reason`: the first failure's text with
// fallback off, else "kind: reason" for each step, joined with "; ").
class AllocationError : public Error {
 public:
  AllocationError(const std::string& resource, MemoryKind kind, std::size_t bytes, std::string reason,
                  bool fallback);
  MemoryKind kind() const noexcept { return kind_; }
  std::size_t bytes() const noexcept { return bytes_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  MemoryKind kind_;
  std::size_t bytes_;
  std::string reason_;
};

}  // namespace imgpipe::memory
