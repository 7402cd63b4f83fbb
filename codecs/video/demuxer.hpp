// A video file's container through libavformat: opened, its video stream
// found (with libavcodec's decoder for it), what the container and the
// stream say about the frames (VideoInfo), and the stream's packets in file
// order, those of other streams skipped. An error the demuxer logs while it
// reads (through FFmpeg's log callback, ffmpeg_log.hpp) means it skipped
// data it could not parse, frames with it: skipped() says what, and the
// reader breaks the file there (video_file.hpp's policy).
#pragma once

#include <cstdint>
#include <string>

#include "codecs/video/frame.hpp"

struct AVCodec;
struct AVFormatContext;
struct AVPacket;
struct AVStream;

namespace imgpipe::codecs {

class Demuxer {
 public:
  // Opens `path` and its best video stream. Throws imgpipe::Error
  // "'<path>': <why>": cannot open video, cannot read the stream
  // information, no video stream, no decoder for its video codec.
  explicit Demuxer(std::string path);
  ~Demuxer();
  Demuxer(const Demuxer&) = delete;
  Demuxer& operator=(const Demuxer&) = delete;

  const std::string& path() const noexcept { return path_; }
  const AVStream* stream() const noexcept;                 // the video stream (another after reopen())
  const AVCodec* decoder() const noexcept { return codec_; }  // libavcodec's decoder for it
  // What the container and the stream's parameters say (the pixel format
  // and size: the stream's, before any frame is decoded).
  VideoInfo info() const;
  std::int64_t file_size() const noexcept;  // -1 when unknown

  // The next packet of the video stream into `into` (the one peek() read,
  // if any): av_read_frame's result (AVERROR_EOF at the end).
  int read(AVPacket* into);
  // Reads the packet after the one read last and keeps it for read():
  // av_read_frame's result (AVERROR_EOF: the file ends there).
  int peek();
  void drop_peeked() noexcept;
  // The packet peek() read (null when none is kept).
  const AVPacket* peeked() const noexcept { return have_ahead_ ? ahead_ : nullptr; }

  // What the demuxer logged first while it read (since the file was opened
  // or clear_skipped()): the data it skipped. Empty: nothing.
  const std::string& skipped() const noexcept { return skipped_; }
  void clear_skipped() noexcept { skipped_.clear(); }

  // Back to the keyframe at or before `pts` (the stream's time base); false
  // when the container cannot seek there.
  bool seek_before(std::int64_t pts);
  // The file opened again from the start (a seek to the start is not exact
  // in every container); false when it no longer opens with the same stream.
  bool reopen();

  // `ticks` of the stream's time base in seconds, and the stream's start
  // (0 when unknown).
  double seconds(std::int64_t ticks) const noexcept;
  std::int64_t start_time() const noexcept;

 private:
  int read_stream(AVPacket* into);         // av_read_frame until a packet of the stream
  int open_input(AVFormatContext*& into);  // `path_` into `into`, its errors watched (skipped_)
  static void close_input(AVFormatContext*& f);
  void release() noexcept;

  std::string path_;
  AVFormatContext* fmt_ = nullptr;
  int stream_ = -1;
  const AVCodec* codec_ = nullptr;
  AVPacket* ahead_ = nullptr;  // a packet read ahead (peek())
  bool have_ahead_ = false;
  std::string skipped_;  // FFmpeg's log callback writes it, on the thread that reads
};

}  // namespace imgpipe::codecs
