// VideoFile's state, private to codecs/video/: the reader's parts
// (video_file.cpp: opening, the frames and the damage policy;
// video_seek.cpp: decoding again from elsewhere, for seek() and to place
// damage) share it. video_file.hpp has the API and the policy.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include "codecs/video/damage.hpp"
#include "codecs/video/demuxer.hpp"
#include "codecs/video/frame_index.hpp"
#include "codecs/video/video_decoder.hpp"
#include "codecs/video/video_file.hpp"
#include "codecs/route/video_route.hpp"

namespace imgpipe::memory {
class FramePool;
}

namespace imgpipe::codecs {

// The file's demuxer, its decoder, and the frames between them: which are
// delivered, and where the file breaks (video_file.hpp's policy).
struct VideoFile::Impl {
  std::string path;
  VideoInfo info;
  std::unique_ptr<Demuxer> demux;
  std::unique_ptr<FrameDecoder> dec;
  AVPacket* pkt = nullptr;  // the packet read last
  int device = -1;  // NVDEC's, or -1: libavcodec (from the start, or since the file moved off NVDEC)
  int threads = 1;  // VideoFileOptions::threads
  bool skip_unreferenced = true;  // VideoFileOptions::skip_unreferenced
  std::string cpu_reason;
  VideoRouter* router = nullptr;
  std::shared_ptr<memory::FramePool> frame_pool;  // libavcodec's frame memory (VideoFileOptions::frames)
  bool ts_cut = false;  // an MPEG-TS file that ends inside a transport packet
  std::int64_t frames = 0;
  // Frames the decoders put out since the file was opened, delivered or not
  // (dropped before a seek's target, decoded again by relocate(), an edit
  // list's discarded ones): VideoFile::decoded().
  std::int64_t decoded = 0;
  // Frames delivered since the file opened, and the router told of the
  // frames decoded but not delivered up to `dropped_told` (report_dropped()).
  std::int64_t delivered_total = 0, dropped_told = 0;
  void report_dropped() {
    const std::int64_t dropped = decoded - delivered_total - static_cast<std::int64_t>(held.size());
    for (; dropped_told < dropped; ++dropped_told) router->dropped(device);
  }
  // How far into the declared frames the file got: frames returned, or the
  // presentation time of the latest one in frames, whichever says more (AVI
  // files may hold empty "repeat the last frame" chunks that count without
  // being decoded).
  std::int64_t covered = 0;
  std::string error;
  Next done = Next::frame;  // end or broken once the file is over
  bool draining = false;    // the decoder was sent its end (file end or damage)
  bool drained = false;     // and gave its last frame
  // Frames decoded but not yet delivered. With frame threads, libavcodec
  // reports a packet's damage only when its frame is due, after frames
  // decoded from it (B-frames shown before it) may have come out: so that
  // none of those is delivered, `hold` frames (the frame threads) are kept
  // back. Damage the decoder finds then has no place: the file is decoded
  // again from the last frame delivered with one thread, which finds the
  // place (relocate()), so the break does not depend on the threads. NVDEC
  // is held back the same way (kNvdecHold), its damage placed by libavcodec.
  std::deque<Decoded> held;
  std::size_t hold = 0;
  static constexpr std::size_t kNvdecHold = 4;
  std::int64_t last_pts = AV_NOPTS_VALUE;  // of the frame delivered last
  // After relocate(): frames decoded again are dropped until the one
  // delivered last has come again (`overlap`), or by count from the start.
  // After seek(): frames shown before `target_pts` are dropped (`target`).
  enum class Resync { none, overlap, count, target } resync = Resync::none;
  std::int64_t skip = 0;  // Resync::count: frames still to drop
  std::int64_t target_pts = AV_NOPTS_VALUE;  // Resync::target: the frame seek() or skip_to() asked for
  // Resync::target set by skip_to(): decoding went on from frame
  // `skipped_from`, and damage before the target breaks the file there.
  bool skipping = false;
  std::int64_t skipped_from = 0;
  // want(): the presentation times of the frames asked for next, sorted.
  // Before the last, a packet of another frame is sent as one before a
  // seek's target (send_packet). Cleared where the file is decoded again
  // other than by seek().
  std::vector<std::int64_t> wanted;
  std::int64_t last_index = -1;  // the frame delivered last, since the last seek()
  std::unique_ptr<FrameIndex> findex;        // built by the first seek()
  // Since a seek the frames are checked against the index: the keyframe
  // decoding started from (the index's keys), -1 from the file's start. A
  // decoder may drop, without a word, frames decoded from a keyframe that
  // does not reset it (an H.264 I-frame that is not an IDR): a frame the
  // index lists that does not come out is decoded again from the keyframe
  // before, and finally from the start.
  std::int64_t seek_key = -1;
  bool seeked = false;
  // Packets the container marks to be discarded (an MP4 edit list's cut):
  // decoded, never shown, yet in the frame count the container declares.
  std::int64_t discarded = 0;
  bool relocated = false;
  // Damage found while reading or decoding: the reason, and the presentation
  // time from which frames are not whole (INT64_MIN: no frame drained after
  // it is delivered; the drain still runs so that later calls are clean).
  std::string damage;
  std::int64_t damage_pts = AV_NOPTS_VALUE;
  std::unique_ptr<ClusterWatch> clusters;  // a Matroska file's CRC-32 checks
  bool crc_drain = false;  // past a cluster that failed its check: the decoder drains, its last chance to place the damage
  // The packets sent whose frames have not come out, in decode order
  // (number, presentation time). A frame is delivered only once every frame
  // decoded before it has come out: a frame the decoder finds damaged (a P
  // frame, shown after the B-frames that refer to it) then stops those that
  // were decoded after it (`damage_seq`). A decoder that meets damage may
  // drop a frame decoded before it without a word: the break then comes at
  // the first such frame, so that no frame is skipped silently.
  struct Sent {
    std::int64_t seq, pts;
  };
  std::deque<Sent> pending;
  std::int64_t sent = 0;                 // packets sent
  std::int64_t sent_dts = AV_NOPTS_VALUE;  // the decode time of the last packet sent with one
  std::int64_t damage_seq = INT64_MAX;   // frames decoded after this one are not whole
  // A packet whose frame has not come out this many packets later makes no
  // frame of its own (H.264 reorders at most 16 frames; a second field).
  static constexpr std::int64_t kReorder = 34;

  // Tells the router how long a call of VideoFile's decoded, on the route
  // the file is on when it returns.
  struct Timed {
    Impl& d;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    explicit Timed(Impl& impl) : d(impl) {}
    ~Timed() {
      if (d.router) d.router->worked(d.device, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  };

  ~Impl() {
    if (router) {
      report_dropped();
      router->closed(device, info, decoded);
    }
    dec.reset();
    av_packet_free(&pkt);
    demux.reset();
  }

  void open(const VideoFileOptions& opts);
  void start_decoder(const VideoFileOptions& opts);
  Next next(std::shared_ptr<VideoFrame>& out);
  void take(Decoded d);
  void on_drained();
  void feed();
  void demuxer_skipped();
  void send_packet();
  Next deliver(std::shared_ptr<VideoFrame>& out);
  Next finish();
  Next broken(std::string why) {
    error = std::move(why);
    done = Next::broken;
    return done;
  }
  // Damage at packet `pts`: stop reading, drain what the decoder holds, and
  // deliver of it only the frames shown before `pts`. Damage found without
  // its place (a decoder error, a concealed frame) also drops the frames
  // held back (see `hold`): they may have been decoded from it.
  void damaged(std::string why, std::int64_t pts, std::int64_t seq = INT64_MAX) {
    if (skipping && damage.empty()) unskip(pts);
    if (damage.empty()) {
      damage = std::move(why);
      damage_pts = pts == AV_NOPTS_VALUE ? INT64_MIN : pts;
      damage_seq = seq;
      std::erase_if(held, [&](const Decoded& d) { return after_damage(d); });
    }
    drain();
  }
  // Sends the decoder its end (once): it puts out what it holds.
  void drain() {
    if (!draining) {
      dec->send(nullptr);
      draining = true;
    }
  }
  // With frame threads or NVDEC (frames held back), the first damage is
  // placed by a one-thread libavcodec decode (relocate()): true when that
  // decode has started instead.
  bool place_with_one_thread() { return hold > 0 && !relocated && damage.empty() && relocate(); }
  // A frame shown at or after the damage, or decoded after a damaged frame.
  bool after_damage(const Decoded& d) const noexcept {
    return !damage.empty() && (damage_pts == INT64_MIN || d.pts == AV_NOPTS_VALUE || d.pts >= damage_pts ||
                               (d.seq >= 0 && d.seq > damage_seq));
  }
  // Damage the decoder found (a rejected packet, a frame with concealed
  // damage at `pts`, decoded `seq`-th): placed by a one-thread decoder when
  // frame threads or NVDEC found it, else as damaged() places it.
  void decoder_damage(std::string why, std::int64_t pts, std::int64_t seq = INT64_MAX) {
    if (place_with_one_thread()) return;
    // Damage before the decoder is back at the frame delivered last: the
    // seek may have landed between keyframes; from the start.
    if (resync == Resync::overlap && damage.empty() && restart(Resync::count)) return;
    damaged(std::move(why), hold > 0 ? INT64_MIN : pts, seq);
  }
  bool relocate();
  bool restart(Resync how, int threads = 1, const std::string& why = {}, bool seeking = false);
  bool seek(std::int64_t index);
  bool skip_to(std::int64_t index);
  void want(const std::vector<std::int64_t>& indices);
  // A packet at `pts` of a frame want() does not ask for, before the last it
  // asks for, where frames are held back (with one thread, skip_to() is
  // asked before the decoder is fed past the next frame asked for).
  bool unwanted(std::int64_t pts) const noexcept {
    return hold > 0 && !wanted.empty() && pts != AV_NOPTS_VALUE && pts < wanted.back() &&
           !std::binary_search(wanted.begin(), wanted.end(), pts);
  }
  void unskip(std::int64_t pts);
  const FrameIndex& frame_index() {
    if (!findex) {
      Demuxer scan(path);
      findex = std::make_unique<FrameIndex>(FrameIndex::scan(scan));
    }
    return *findex;
  }
  bool seek_to_key();
  std::int64_t landed_key();
  bool missed(const Decoded& d) const noexcept {
    return seeked && d.pts != AV_NOPTS_VALUE && static_cast<std::size_t>(frames) < findex->size() &&
           d.pts != findex->pts[static_cast<std::size_t>(frames)];
  }
  bool missing_tail() const noexcept {
    return seeked && damage.empty() && static_cast<std::size_t>(frames) < findex->size();
  }
  bool decode_again_earlier();
  // A libavcodec decoder from the keyframe before the frame delivered last
  // (from the start when the container cannot seek there, or nothing was
  // delivered): restart()'s overlap, else its count.
  bool resume(int with_threads, const std::string& why = {}) {
    // Frames skip_to() passed over are decoded again: from the one after
    // the frame delivered last, counted from there.
    if (last_index >= 0 && frames > last_index + 1) frames = covered = last_index + 1;
    if (frames > 0 && last_pts != AV_NOPTS_VALUE && restart(Resync::overlap, with_threads, why)) return true;
    return restart(Resync::count, with_threads, why);
  }
  // NVDEC ran out of frame memory (its decoder's ENOMEM): libavcodec
  // decodes the rest of the file with the file's threads, and the report
  // counts the reason (false when it cannot start there).
  bool leave_nvdec() {
    static const std::string why =
        "NVDEC's frame memory (memory.nvdec_frames_mb) was full: the CPU route decoded the rest";
    return device >= 0 && damage.empty() && resume(threads, why);
  }
  // A frame of a cluster that failed its CRC-32 check, or shown after one:
  // it waits for the decoder's verdict on the cluster.
  bool suspect(const Decoded& d) const noexcept { return clusters->holds(d.pts, d.seq); }
  // Every frame decoded before `d` has come out (so none of them can still
  // turn out damaged).
  bool decoded_before_out(const Decoded& d) const noexcept {
    return d.seq < 0 || pending.empty() || pending.front().seq > d.seq;
  }
  // True for a frame decoded again after relocate() that was delivered already.
  bool seen_before(const Decoded& d);
};

}  // namespace imgpipe::codecs
