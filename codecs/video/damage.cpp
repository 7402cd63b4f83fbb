#include "codecs/video/damage.hpp"

#include <algorithm>

#include <fmt/format.h>

extern "C" {
#include <libavutil/avutil.h>
#include <libavutil/crc.h>
}

namespace imgpipe::codecs {

// ------------------------------------------------------ Matroska's checksums

ClusterCheck::ClusterCheck(const std::string& path) : f_(std::fopen(path.c_str(), "rb")) {
  std::uint32_t id = 0;
  std::uint64_t size = 0;
  int at = 0;
  // The EBML header, then the segment whose children are the clusters.
  if (f_ && std::fseek(f_, 0, SEEK_END) == 0) size_ = std::ftell(f_);
  if (!f_ || size_ < 0 || !header(0, id, size, at) || id != 0x1A45DFA3) {
    stop();
    return;
  }
  const std::int64_t seg = at + static_cast<std::int64_t>(size);
  if (!header(seg, id, size, at) || id != 0x18538067) {
    stop();
    return;
  }
  next_ = seg + at;
  end_ = size == kUnknown ? INT64_MAX : next_ + static_cast<std::int64_t>(size);
}

bool ClusterCheck::upto(std::int64_t pos, std::int64_t& time, std::int64_t& end) {
  while (f_ && next_ <= pos && next_ < end_) {
    std::uint32_t id = 0;
    std::uint64_t size = 0;
    int at = 0;
    if (!header(next_, id, size, at) || size == kUnknown) {
      stop();  // a live-written file (sizes unknown) or a broken header: the demuxer judges it
      break;
    }
    const std::int64_t body = next_ + at;
    next_ = body + static_cast<std::int64_t>(size);
    if (id != 0x1F43B675 || size < 6 || size > (std::uint64_t{1} << 30)) continue;  // not a cluster
    // A cluster that ends past the file's end was cut short (the demuxer
    // finds that): known before reading, so that a few bytes declaring a
    // cluster of up to 1 GiB allocate none of it.
    const bool whole = next_ <= size_;
    if (whole) buf_.resize(size);
    if (!whole || std::fseek(f_, static_cast<long>(body), SEEK_SET) != 0 ||
        std::fread(buf_.data(), 1, size, f_) != size) {
      stop();
      break;
    }
    if (buf_[0] != 0xBF || buf_[1] != 0x84) continue;  // no CRC-32 element
    const std::uint32_t stored = buf_[2] | (buf_[3] << 8) | (buf_[4] << 16) | (std::uint32_t{buf_[5]} << 24);
    const std::uint32_t crc =
        av_crc(av_crc_get_table(AV_CRC_32_IEEE_LE), UINT32_MAX, buf_.data() + 6, size - 6) ^ UINT32_MAX;
    if (crc != stored) {
      time = timestamp();
      end = next_;
      return false;
    }
  }
  return true;
}

void ClusterCheck::stop() {
  if (f_) std::fclose(f_);
  f_ = nullptr;
}

bool ClusterCheck::header(std::int64_t pos, std::uint32_t& id, std::uint64_t& size, int& at) {
  unsigned char h[12];
  if (std::fseek(f_, static_cast<long>(pos), SEEK_SET) != 0) return false;
  const std::size_t got = std::fread(h, 1, sizeof h, f_);
  int n = 0;
  std::uint64_t v = 0;
  if (!vint(h, got, 0, true, v, n) || n > 4) return false;
  id = static_cast<std::uint32_t>(v);
  int m = 0;
  if (!vint(h, got, n, false, size, m)) return false;
  at = n + m;
  return true;
}

bool ClusterCheck::vint(const unsigned char* h, std::size_t got, int i, bool keep, std::uint64_t& v, int& n) {
  if (static_cast<std::size_t>(i) >= got || h[i] == 0) return false;
  n = 1;
  unsigned mask = 0x80;
  while (!(h[i] & mask)) ++n, mask >>= 1;
  if (static_cast<std::size_t>(i + n) > got) return false;
  v = keep ? h[i] : (h[i] & (mask - 1));
  bool ones = v == mask - 1;
  for (int k = 1; k < n; ++k) {
    v = (v << 8) | h[i + k];
    ones = ones && h[i + k] == 0xFF;
  }
  if (!keep && ones) v = kUnknown;
  return true;
}

std::int64_t ClusterCheck::timestamp() const {
  std::size_t i = 6;
  while (i + 2 <= buf_.size()) {
    std::uint64_t id = 0, size = 0;
    int n = 0, m = 0;
    if (!vint(buf_.data(), buf_.size(), static_cast<int>(i), true, id, n) ||
        !vint(buf_.data(), buf_.size(), static_cast<int>(i) + n, false, size, m) || size > 8)
      break;
    i += static_cast<std::size_t>(n + m);
    if (id == 0xE7 && i + size <= buf_.size()) {
      std::int64_t t = 0;
      for (std::uint64_t k = 0; k < size; ++k) t = (t << 8) | buf_[i + k];
      return t;
    }
    i += size;
  }
  return 0;
}

// ------------------------------------------------------- the suspect cluster

ClusterWatch::ClusterWatch(const std::string& path, bool matroska)
    : check_(matroska ? std::make_unique<ClusterCheck>(path) : nullptr) {}

void ClusterWatch::read(std::int64_t pos, std::int64_t seq) {
  if (check_ && pos >= 0 && end_ < 0 && !check_->upto(pos, time_, end_)) {
    check_.reset();  // one damaged cluster is enough
    seq_ = seq;
    begin_ = pos;
  }
}

void ClusterWatch::shown(std::int64_t pts, std::int64_t pos) noexcept {
  if (end_ >= 0 && pts != AV_NOPTS_VALUE && pos >= begin_) time_ = std::min(time_, pts);
}

bool ClusterWatch::holds(std::int64_t pts, std::int64_t seq) const noexcept {
  return end_ >= 0 && (pts == AV_NOPTS_VALUE || pts >= time_ || (seq >= 0 && seq >= seq_));
}

// ------------------------------------------------------------ cut short

bool mpegts_cut(std::int64_t file_size) noexcept {
  return file_size > 0 && file_size % 188 != 0 && file_size % 192 != 0 && file_size % 204 != 0;
}

std::string truncation(const VideoInfo& info, std::int64_t frames, std::int64_t covered, bool ts_cut) {
  const std::int64_t declared = info.declared_frames;
  const std::int64_t tolerance = info.declared_exact ? 0 : std::max<std::int64_t>(2, declared / 100);
  if (ts_cut) return fmt::format("the file ends at frame {} inside a transport stream packet (truncated)", frames);
  if (declared > 0 && std::max(frames, covered) < declared - tolerance)
    return fmt::format("the file ends at frame {} of {} its container declares (truncated)", frames, declared);
  return {};
}

}  // namespace imgpipe::codecs
