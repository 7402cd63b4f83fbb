// Damage the container shows where neither the demuxer nor the decoder
// reports it (video_file.hpp's policy lists every kind): a Matroska cluster
// that fails its CRC-32 check, an MPEG-TS file that ends inside a transport
// packet, a file that ends before the frame count its container declares.
// VideoFile asks these as it reads; the demuxer's own errors are
// demuxer.hpp's, the decoder's the decoders'.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "codecs/video/frame.hpp"

namespace imgpipe::codecs {

// The CRC-32 elements that FFmpeg's Matroska muxer (and others) write first
// in every cluster, checked as the demuxer reaches each cluster: FFmpeg's
// demuxer skips them, and damage in a frame's entropy-coded data decodes
// without an error in most HEVC and VP9 streams. The file is read a second
// time, a cluster at a time, through its own handle. A cluster that ends
// past the file's end (cut short, or a size field damaged) stops the check
// unread, the demuxer's to report: nothing is allocated for bytes that the
// file does not hold.
class ClusterCheck {
 public:
  explicit ClusterCheck(const std::string& path);
  ~ClusterCheck() { stop(); }
  ClusterCheck(const ClusterCheck&) = delete;
  ClusterCheck& operator=(const ClusterCheck&) = delete;

  // Checks the clusters up to the one holding byte `pos` of the file. False
  // when one fails its check; `time` is then its timestamp (the packets'
  // time base: Matroska's TimestampScale) and `end` the byte after it.
  bool upto(std::int64_t pos, std::int64_t& time, std::int64_t& end);

 private:
  static constexpr std::uint64_t kUnknown = ~std::uint64_t{0};
  void stop();
  // An EBML element's ID and data size at `pos` (`at`: the header's bytes).
  bool header(std::int64_t pos, std::uint32_t& id, std::uint64_t& size, int& at);
  // An EBML variable-length integer at h[i] (with its length marker for IDs).
  static bool vint(const unsigned char* h, std::size_t got, int i, bool keep, std::uint64_t& v, int& n);
  // The timestamp of the cluster in buf_ (its Timestamp child), 0 if none.
  std::int64_t timestamp() const;

  std::FILE* f_ = nullptr;
  std::int64_t next_ = 0;  // the next segment child to check
  std::int64_t end_ = 0;   // of the segment
  std::int64_t size_ = -1;  // of the file, in bytes
  std::vector<unsigned char> buf_;
};

// A Matroska file's clusters as its packets are read (ClusterCheck): the
// first that fails its check is suspect, from its timestamp to its end (a
// byte offset). Its frames wait, so that the decoder can place the damage;
// if the decoder finds none by the cluster's end, the break is at its start.
// Other containers: never suspect.
class ClusterWatch {
 public:
  // `matroska`: the file is checked (else nothing is).
  ClusterWatch(const std::string& path, bool matroska);

  // A packet read from file position `pos` (-1 unknown), to be sent
  // `seq`-th: the clusters up to its own are checked, once none failed yet.
  void read(std::int64_t pos, std::int64_t seq);
  bool failed() const noexcept { return end_ >= 0; }
  // A packet from `pos` lies past the suspect cluster.
  bool past(std::int64_t pos) const noexcept { return pos >= end_; }
  // A packet of the suspect cluster (or after it) with presentation time
  // `pts`: the cluster's frames shown first (open GOPs) start its time; not
  // those read again before it after the file is decoded again.
  void shown(std::int64_t pts, std::int64_t pos) noexcept;
  // A frame (`pts`, INT64_MIN unknown; decoded from the `seq`-th packet, -1
  // unknown) of the suspect cluster, or shown after one: it waits for the
  // decoder's verdict on the cluster.
  bool holds(std::int64_t pts, std::int64_t seq) const noexcept;
  std::int64_t time() const noexcept { return time_; }  // the cluster's first frame shown (stream time base)
  std::int64_t seq() const noexcept { return seq_; }    // the number of its first packet sent

 private:
  std::unique_ptr<ClusterCheck> check_;  // null once one failed (one damaged cluster is enough)
  std::int64_t time_ = INT64_MAX, end_ = -1;
  std::int64_t begin_ = -1;       // the file position of its first packet read
  std::int64_t seq_ = INT64_MAX;
};

// An MPEG-TS file is a whole number of transport packets (188 bytes, 192
// with timestamps, 204 with error correction): one of `file_size` bytes
// that is not was cut, even where the cut fell between frames.
bool mpegts_cut(std::int64_t file_size) noexcept;

// Why a file whose decoder delivered `frames` frames and drained is cut
// short, or empty when it is not: it is an MPEG-TS file cut inside a
// transport packet (`ts_cut`), or it ends before the frame count its
// container declares (`covered`: how far into the declared frames it got),
// beyond a tolerance of max(2, 1%) for counts that are an estimate.
std::string truncation(const VideoInfo& info, std::int64_t frames, std::int64_t covered, bool ts_cut);

}  // namespace imgpipe::codecs
