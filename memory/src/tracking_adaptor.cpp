#include "memory/tracking_adaptor.hpp"

#include <algorithm>
#include <mutex>
#include <sstream>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/logger.h>

#include "imgpipe/log.hpp"
#include "memory/errors.hpp"

namespace imgpipe::memory {

struct AllocationLedger::Impl {
  struct Entry {
    std::size_t bytes;
    SourceSite where;
  };
  std::string name;
  mutable std::mutex m;
  std::unordered_map<void*, Entry> live;
};

AllocationLedger::AllocationLedger(std::string name) : impl_(std::make_unique<Impl>()) {
  impl_->name = std::move(name);
}

AllocationLedger::~AllocationLedger() {
  const std::string leaks = report();
  if (!leaks.empty()) imgpipe::logger()->warn("{}", leaks);
}

void AllocationLedger::add(void* p, std::size_t bytes, SourceSite where) {
  std::lock_guard lock(impl_->m);
  impl_->live.insert_or_assign(p, Impl::Entry{bytes, where});
}

bool AllocationLedger::remove(void* p) noexcept {
  std::lock_guard lock(impl_->m);
  if (impl_->live.erase(p) != 0) return true;
  imgpipe::logger()->error("{}: deallocate of a block the tracker never saw allocated ({})", impl_->name, p);
  return false;
}

std::size_t AllocationLedger::live_blocks() const {
  std::lock_guard lock(impl_->m);
  return impl_->live.size();
}

std::size_t AllocationLedger::live_bytes() const {
  std::lock_guard lock(impl_->m);
  std::size_t bytes = 0;
  for (const auto& [p, e] : impl_->live) bytes += e.bytes;
  return bytes;
}

const std::string& AllocationLedger::name() const noexcept { return impl_->name; }

std::string AllocationLedger::report() const {
  using Item = std::pair<void*, Impl::Entry>;
  std::vector<Item> items;
  {
    std::lock_guard lock(impl_->m);
    items.assign(impl_->live.begin(), impl_->live.end());
  }
  if (items.empty()) return {};
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return std::make_tuple(std::string_view(a.second.where.file_name()), a.second.where.line_number(), a.first) <
           std::make_tuple(std::string_view(b.second.where.file_name()), b.second.where.line_number(), b.first);
  });
  std::size_t bytes = 0;
  for (const auto& [p, e] : items) bytes += e.bytes;
  std::ostringstream os;
  os << fmt::format("{}: {} block(s) ({}) still allocated:", impl_->name, items.size(), human_bytes(bytes));
  for (const auto& [p, e] : items)
    os << fmt::format("\n  {} bytes at {}, allocated at {}:{} in {}", e.bytes, p, e.where.file_name(),
                      e.where.line_number(), e.where.function_name());
  return os.str();
}

}  // namespace imgpipe::memory
