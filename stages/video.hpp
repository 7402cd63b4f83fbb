// Video inputs: each video file (or stream URL or camera, live_input.hpp) is
// decoded in order by its own reader thread into a small bounded queue:
// files with FFmpeg's libraries directly (codecs/video/video_file.hpp:
// frames stay YUV until the decode stage converts them, with the stream's
// matrix and range), stream URLs and cameras with OpenCV's VideoCapture
// (BGR). Several videos decode at once while the pipeline's source stage
// takes their frames (input.video.interleave).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <opencv2/core.hpp>

#include "codecs/video/video_file.hpp"
#include "codecs/route/video_route.hpp"
#include "imgpipe/report.hpp"
#include "live_input.hpp"
#include "stage.hpp"

namespace imgpipe::codecs::opencv_io {
class Capture;
}

namespace imgpipe::stages {

// The video decoders' own figures, per route (the report's rows "video cpu"
// and "video nvdec", before the source's): the reader threads' time inside
// the decoder (opening a file, then each call for its next frame; waiting for
// room in a reader's queue is not counted), the frames delivered and their
// bytes. Stream URLs and cameras count on the CPU route (OpenCV decodes them
// there; their time includes waiting for the stream or the camera). Written
// by the readers, shared with them: a live input's reader may outlive the run.
struct VideoDecodeStats {
  StageStats cpu{std::string(kVideoCpuRow), true, Counts::frames};
  StageStats nvdec{std::string(kVideoNvdecRow), true, Counts::frames};
  // Videos that delivered a frame on each route (a file moved from NVDEC to
  // the CPU mid-way counts on both).
  std::atomic<std::uint64_t> cpu_videos{0}, nvdec_videos{0};

  // Frames each route's decoders produced, delivered or not (frames before
  // a clip's first, between its frames, decoded again after damage): against
  // the frames delivered (cpu.items, nvdec.items), the decode amplification.
  std::atomic<std::uint64_t> cpu_decoded{0}, nvdec_decoded{0};
  // input.video.clips: clips queued, and the videos shorter than a clip:
  // left out (short: skip, each also a failure), padded, looped.
  std::atomic<std::uint64_t> clips{0}, short_skipped{0}, short_padded{0}, short_looped{0};

  StageStats& route(int device) noexcept { return device >= 0 ? nvdec : cpu; }
  std::atomic<std::uint64_t>& decoded(int device) noexcept { return device >= 0 ? nvdec_decoded : cpu_decoded; }
};

struct VideoOptions {
  std::int64_t start = 0;       // first frame index delivered
  std::int64_t stride = 1;      // deliver every stride-th frame from start
  std::int64_t max_frames = 0;  // per file; 0 = all
  StreamTimeouts stream;        // stream URLs only (files and cameras ignore them)
  int threads = 1;              // files: the CPU video decoder's threads
  codecs::VideoRouter* router = nullptr;  // files: picks NVDEC or the CPU (null: the CPU)
  std::shared_ptr<memory::FramePool> frames = nullptr;  // files: the pool the CPU video decoder decodes into (null: its own)
  std::shared_ptr<VideoDecodeStats> decode_stats = nullptr;  // where the readers count their decoding (null: nowhere)
  // Files: clips instead of frames (input.video.clips; on() false: frames),
  // drawn from (seed, epoch, item: the video's InputItem::id).
  ClipConfig clips{};
  std::uint64_t seed = 0, epoch = 0, item = 0;
};

// One frame from a reader: a file's decoded YUV frame (`yuv`, with the
// container's display rotation to apply), or a live input's BGR frame.
struct VideoPayload {
  cv::Mat bgr;
  std::shared_ptr<codecs::VideoFrame> yuv;
  int rotation = 0;  // clockwise degrees, then
  bool flip = false;  // a horizontal mirror
  // input.video.clips: the clip (its number in the video's plan) and the
  // frame's place in it; -1 without clips. The frame's presentation time in
  // seconds (NaN when unknown).
  std::int64_t clip = -1;
  int clip_frame = 0;
  double pts = std::numeric_limits<double>::quiet_NaN();
};

// True when the file name has one of the video extensions OpenCV's FFmpeg
// backend reads (.avi .mp4 .mkv .mov .webm .m4v .mpg .mpeg .wmv .flv .ts .3gp .ogv), case-insensitive.
bool is_video_path(const std::string& path);
// The extension of the path's file name as std::filesystem::path::extension
// has it (from the last dot; none for a name that starts with its only dot,
// for . and .., or for a path ending in a slash), without making a path:
// discovery asks it of every input.
std::string_view file_extension(std::string_view path) noexcept;

// Wakes one waiter when any of several readers queues a frame or finishes,
// so that the source can take frames in order of readiness
// (input.video.order: ready) and block only while none has one. Race-free
// use: read count() before looking at the readers, then wait_until() with
// it; a frame queued after the look changes the count.
class VideoNotifier {
 public:
  std::uint64_t count() const;
  void signal();
  // Waits until the count differs from `seen` or `deadline` passes; true
  // when it changed.
  bool wait_until(std::uint64_t seen, std::chrono::steady_clock::time_point deadline);

 private:
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::uint64_t count_ = 0;
};

// Decodes one file, stream URL or camera (live_input.hpp) on a background
// thread into a queue of at most `depth` frames. A live input's frames keep
// their buffers: the caller swaps its spent Mat in, so steady state allocates
// nothing (a file's frames come from the decoder's own pool). Never throws
// from the thread: errors end the input with error() set.
class VideoReader {
 public:
  // `cancel` (may be null; must outlive the reader) ends a next() that
  // waits for a frame when it becomes true, as the pipeline's stop does.
  // `notify` (may be null) is signalled each time a frame is queued and when
  // the input ends.
  VideoReader(std::string path, VideoOptions opts, std::size_t depth = 4, const std::atomic<bool>* cancel = nullptr,
              std::shared_ptr<VideoNotifier> notify = nullptr);
  // Stops the thread and joins it. A live input's thread that is still
  // blocked in a read after a short grace (a stalled stream, a camera that
  // sends nothing) is detached instead: it ends by itself when the read
  // times out, so stopping never waits for the stream.
  ~VideoReader();
  VideoReader(const VideoReader&) = delete;
  VideoReader& operator=(const VideoReader&) = delete;

  // Blocks for the next frame: swaps it into `frame` (the caller's previous
  // buffer is recycled) and sets its index. Returns false at the end of the
  // file or stream (then finished() is true and error() says whether it
  // ended early), or when stopped or cancelled (finished() may be false).
  bool next(VideoPayload& frame, std::int64_t& index);
  // The same, waiting no later than `deadline`: false with *timed_out set
  // when no frame came by then and the input goes on (batch.timeout_ms cuts
  // the pending batch meanwhile).
  bool next_until(VideoPayload& frame, std::int64_t& index, std::chrono::steady_clock::time_point deadline,
                  bool& timed_out);
  // The same without waiting: false when no frame is queued now. Frames are
  // queued before the input ends, so a false from a try_next() called after
  // finished() returned true is final.
  bool try_next(VideoPayload& frame, std::int64_t& index);
  // The input has ended (normally or not); error() and stopped_at() are final.
  bool finished() const;

  // Empty when the file ended normally. Otherwise the reason ("cannot open
  // video ...", "opened but yielded no frames", "stream broke at frame k ...",
  // "stream stalled ..."), with the frame index where decoding stopped in
  // stopped_at() (0 when the input could not be opened). Valid once
  // finished().
  //
  // A file breaks at its first damaged frame (codecs/video/video_file.hpp has the
  // policy). For live inputs, a stream "broke" when it ended before the frame count its container
  // declares: the frames read, or the presentation time of the last one (AVI
  // files may hold empty "repeat the last frame" chunks that count without
  // being decoded), fall short of that count by more than max(2, 1%). A
  // stream URL "stalled" when a read found no data within its read timeout.
  // A camera that stops delivering frames is a failure too (a camera never
  // ends by itself). The frame decoded last before a break or a stall is not
  // delivered (it holds the data cut or damaged there, which FFmpeg conceals
  // without an error): the failure is reported at that frame.
  const std::string& error() const noexcept;
  std::int64_t stopped_at() const noexcept;
  const std::string& path() const noexcept;
  void stop() noexcept;

  // Threads of destroyed readers still blocked in a read (see the
  // destructor); they end within their input's read timeout.
  static int detached_running() noexcept;

 private:
  struct State;
  std::shared_ptr<State> s_;  // shared with the thread, which may outlive the reader
  const std::atomic<bool>* cancel_;
  std::thread thread_;
};

// Starts the readers of the video items of an input list ahead of their
// turn, so that up to `ahead` files decode at once (in input order), while the
// source stage takes the frames of one file at a time. Not thread-safe: the
// serial source stage owns it.
class VideoPrefetcher {
 public:
  // `items` must outlive the prefetcher; items with `video` set are videos.
  // Live inputs (stream URLs, cameras) are opened at their turn, not ahead.
  // `cancel` as for VideoReader; `notify` (may be null) is given to every
  // reader.
  VideoPrefetcher(const std::vector<InputItem>& items, VideoOptions opts, int ahead, std::size_t depth = 4,
                  const std::atomic<bool>* cancel = nullptr, std::shared_ptr<VideoNotifier> notify = nullptr);
  ~VideoPrefetcher();
  VideoPrefetcher(const VideoPrefetcher&) = delete;
  VideoPrefetcher& operator=(const VideoPrefetcher&) = delete;

  // Starts readers for the next videos at or after item `from` while fewer
  // than `ahead` are open.
  void prefetch(std::size_t from);
  // The reader of item i (a video), started now if it is not open yet; then
  // prefetches from i.
  VideoReader& reader(std::size_t i);
  // Item i is finished: its reader is stopped and closed.
  void release(std::size_t i);
  void stop_all() noexcept;
  std::size_t open_readers() const noexcept { return open_.size(); }

 private:
  VideoOptions opts_for(const InputItem& item) const;  // opts_ with the item's clip key
  const std::vector<InputItem>& items_;
  VideoOptions opts_;
  std::size_t ahead_;
  std::size_t depth_;
  const std::atomic<bool>* cancel_;
  std::shared_ptr<VideoNotifier> notify_;
  std::size_t next_to_open_ = 0;
  std::map<std::size_t, std::unique_ptr<VideoReader>> open_;
};

}  // namespace imgpipe::stages
