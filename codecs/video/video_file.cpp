#include "codecs/video/video_file.hpp"

#include <algorithm>
#include <deque>

#include <fmt/format.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libswscale/swscale.h>
}

#include "imgpipe/error.hpp"
#include "memory/frame_pool.hpp"
#include "codecs/video/damage.hpp"
#include "codecs/video/demuxer.hpp"
#include "codecs/video/av_error.hpp"
#include "codecs/video/libav/libav_decoder.hpp"
#include "codecs/video/nvdec/nvdec_decoder.hpp"
#include "codecs/route/video_route.hpp"

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
  std::string cpu_reason;
  VideoRouter* router = nullptr;
  std::shared_ptr<memory::FramePool> frame_pool;  // libavcodec's frame memory (VideoFileOptions::frames)
  bool ts_cut = false;  // an MPEG-TS file that ends inside a transport packet
  std::int64_t frames = 0;
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
  std::int64_t target_pts = AV_NOPTS_VALUE;  // Resync::target: the frame seek() asked for
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

  ~Impl() {
    if (router) router->closed(device, info, frames);
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
  bool restart(Resync how, int threads = 1, const std::string& why = {});
  bool seek(std::int64_t index);
  const FrameIndex& frame_index() {
    if (!findex) {
      Demuxer scan(path);
      findex = std::make_unique<FrameIndex>(FrameIndex::scan(scan));
    }
    return *findex;
  }
  bool landed_on(const FrameIndex::Key& key);
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

// ------------------------------------------------------------- opening

void VideoFile::Impl::open(const VideoFileOptions& opts) {
  demux = std::make_unique<Demuxer>(path);
  pkt = av_packet_alloc();
  if (!pkt) throw Error(fmt::format("'{}': out of memory for the decoder", path));
  info = demux->info();
  ts_cut = info.container == "mpegts" && mpegts_cut(demux->file_size());
  clusters = std::make_unique<ClusterWatch>(path, info.container.rfind("matroska", 0) == 0);
  router = opts.router;
  frame_pool = opts.frames;
  threads = opts.threads;
  start_decoder(opts);
}

// The route: NVDEC when the router sends the file there and its decoder
// starts, else libavcodec.
void VideoFile::Impl::start_decoder(const VideoFileOptions& opts) {
  if (router) {
    VideoRouter::Choice c = router->choose(info);
    cpu_reason = std::move(c.cpu_reason);
    if (c.device >= 0) {
      try {
        dec = make_nvdec_decoder(demux->stream(), info, c.device);
        device = c.device;
      } catch (const std::exception& e) {
        cpu_reason = fmt::format("NVDEC could not start ({})", e.what());
        router->fell_back(c.device, info, cpu_reason);
      }
    }
  }
  if (dec) {
    // NVDEC finds some damage a few frames after libavcodec would (it
    // conceals what libavcodec rejects, and flags a later picture): frames
    // are held back as for frame threads, and damage NVDEC finds is placed
    // by a one-thread libavcodec decode (relocate()), so that both routes
    // break at the same frame.
    hold = kNvdecHold;
    return;
  }
  try {
    auto lib = std::make_unique<LibavDecoder>(demux->stream(), demux->decoder(), opts.threads, opts.frames);
    hold = lib->frame_threads();
    dec = std::move(lib);
  } catch (const std::exception& e) {
    throw Error(fmt::format("'{}': {}", path, e.what()));
  }
}

// ------------------------------------------------- placing damage again

// Decodes the file again with one thread from the keyframe before the frame
// delivered last (from the start when the container cannot seek there), so
// that damage frame threads found is placed where one thread finds it: the
// first packet the decoder rejects, or the first frame it flags.
bool VideoFile::Impl::relocate() {
  relocated = true;
  return resume(1);
}

bool VideoFile::Impl::restart(Resync how, int with_threads, const std::string& why) {
  if (how == Resync::overlap) {
    if (!demux->seek_before(last_pts)) return false;
  } else if (how == Resync::target) {
    const FrameIndex::Key& key = findex->keys.at(static_cast<std::size_t>(seek_key));
    demux->drop_peeked();
    if (!demux->seek_before(key.dts != INT64_MIN ? key.dts : key.pts) || !landed_on(key)) return false;
  } else if (!demux->reopen()) {  // from the start
    return false;
  } else {
    discarded = 0;  // read again
  }
  try {
    auto lib = std::make_unique<LibavDecoder>(demux->stream(), demux->decoder(), with_threads, frame_pool);
    hold = lib->frame_threads();
    dec = std::move(lib);
  } catch (const std::exception&) {
    return false;
  }
  // From here the CPU decodes the file: its frames are the CPU route's.
  if (device >= 0 && router) router->moved(device, info, frames, why);
  device = -1;
  held.clear();
  pending.clear();
  sent_dts = AV_NOPTS_VALUE;
  demux->clear_skipped();
  crc_drain = false;
  draining = drained = false;
  if (how != Resync::target) demux->drop_peeked();  // a seek keeps the packet it checked (landed_on)
  resync = how;
  skip = frames;
  return true;
}

// The packet a seek landed on is `key` itself (the same position, or the
// same presentation time where positions are unknown): it stays peeked, the
// first read after the seek.
bool VideoFile::Impl::landed_on(const FrameIndex::Key& key) {
  if (demux->peek() < 0) return false;
  const AVPacket* p = demux->peeked();
  if ((p->flags & AV_PKT_FLAG_KEY) == 0) return false;
  if (key.pos >= 0 && p->pos >= 0) return p->pos == key.pos;
  return (p->pts != AV_NOPTS_VALUE ? p->pts : p->dts) == key.pts;
}

// The frame the index lists next did not come out: decode again, from the
// keyframe before the one decoding started at (from the start after the first).
bool VideoFile::Impl::decode_again_earlier() {
  if (resync == Resync::count || seek_key < 0) return false;  // from the start already: as it decodes
  target_pts = findex->pts[static_cast<std::size_t>(frames)];
  seek_key = std::min<std::int64_t>(seek_key, findex->key_of[static_cast<std::size_t>(frames)]) - 1;
  if (seek_key >= 0 && restart(Resync::target, threads)) return true;
  seek_key = -1;
  return restart(Resync::count, threads);
}

bool VideoFile::Impl::seek(std::int64_t index) {
  const FrameIndex& x = frame_index();
  // What the file's frames so far found is forgotten: the frames from `index` on are judged afresh.
  done = Next::frame;
  error.clear();
  damage.clear();
  damage_pts = AV_NOPTS_VALUE;
  damage_seq = INT64_MAX;
  relocated = false;
  last_pts = AV_NOPTS_VALUE;
  if (index < 0 || static_cast<std::size_t>(index) >= x.size()) {
    frames = covered = static_cast<std::int64_t>(x.size());
    done = Next::end;
    return false;
  }
  frames = covered = index;
  target_pts = x.pts[static_cast<std::size_t>(index)];
  seek_key = x.key_of[static_cast<std::size_t>(index)];
  seeked = true;
  if (restart(Resync::target, threads) || restart(Resync::count, threads)) return true;
  broken(fmt::format("the decoder cannot start again at frame {}", index));
  return false;
}

bool VideoFile::Impl::seen_before(const Decoded& d) {
  switch (resync) {
    case Resync::none: return false;
    case Resync::count:
      if (skip == 0) {
        resync = Resync::none;
        return false;
      }
      --skip;
      return true;
    case Resync::target:
      if (d.pts == target_pts) {  // the frame seek() asked for
        resync = Resync::none;
        return false;
      }
      // Shown after it, or no time to tell: the seek is not where the index
      // says (a container's odd timestamps); from the start, by count.
      if (!restart(Resync::count, threads)) damaged("the decoder lost its place in the file", INT64_MIN);
      return true;
    case Resync::overlap:
      if (d.pts != AV_NOPTS_VALUE && d.pts < last_pts) return true;
      if (d.pts == last_pts) {  // the frame delivered last: in step again
        resync = Resync::none;
        return true;
      }
      // The seek landed past it: from the start, by count.
      if (!restart(Resync::count)) damaged("the decoder lost its place in the file", INT64_MIN);
      return true;
  }
  return false;
}

// ------------------------------------------------------------ the frames

VideoFile::Next VideoFile::Impl::finish() {
  if (!damage.empty()) return broken(fmt::format("damaged data at frame {}: {}", frames, damage));
  if (frames == 0) return broken("no frame could be decoded");
  // The declared count holds the frames an edit list cuts: the index's count
  // of them since a seek (the frames before it were not read), else those read.
  const std::int64_t cut = seeked ? static_cast<std::int64_t>(findex->discarded) : discarded;
  if (std::string why = truncation(info, frames + cut, covered + cut, ts_cut); !why.empty())
    return broken(std::move(why));
  done = Next::end;
  return done;
}

VideoFile::Next VideoFile::Impl::deliver(std::shared_ptr<VideoFrame>& out) {
  Decoded d = std::move(held.front());
  held.pop_front();
  if (d.pts != AV_NOPTS_VALUE && info.fps > 0) {
    const double at = demux->seconds(d.pts - demux->start_time()) * info.fps;
    covered = std::max(covered, static_cast<std::int64_t>(std::llround(at)) + 1);
  }
  covered = std::max(covered, frames + 1);
  last_pts = d.pts;
  out = std::move(d.frame);
  ++frames;
  if (router) router->delivered(device);
  return Next::frame;
}

VideoFile::Next VideoFile::Impl::next(std::shared_ptr<VideoFrame>& out) {
  if (done != Next::frame) return done;
  for (;;) {
    // Once damage is found, frames wait for the drain: it tells which are missing.
    if (!held.empty() && (drained || (held.size() > hold && damage.empty() && decoded_before_out(held.front()) &&
                                      !suspect(held.front())))) {
      if (missed(held.front()) && decode_again_earlier()) continue;
      return deliver(out);
    }
    if (drained) {
      if (missing_tail() && decode_again_earlier()) continue;
      return finish();
    }
    Decoded d;
    const int r = dec->receive(d);
    if (r == 0) {
      take(std::move(d));
    } else if (r == AVERROR_EOF) {
      on_drained();
    } else if (r != AVERROR(EAGAIN)) {
      if (r == AVERROR(ENOMEM) && leave_nvdec()) continue;
      if (resync == Resync::target) continue;  // a frame before a seek's target (send_packet)
      // Frame threading reports a packet's damage when its frame is due.
      decoder_damage(dec->reason(r), INT64_MIN);
    } else if (draining) {
      return finish();  // cannot happen: a draining decoder ends with EOF
    } else {
      feed();
    }
  }
}

// A frame (or damage where one was due) from the decoder: matched with the
// packet it was decoded from, then dropped (shown at or after the damage, or
// delivered already before a relocation), taken as damage, or held back.
void VideoFile::Impl::take(Decoded d) {
  const std::int64_t pts = d.pts;
  if (pts != AV_NOPTS_VALUE) {
    const auto it = std::find_if(pending.begin(), pending.end(), [&](const Sent& p) { return p.pts == pts; });
    if (it != pending.end()) {
      d.seq = it->seq;
      pending.erase(it);
    }
  }
  // Before the frame a seek asked for: dropped, whatever the decoder says of
  // it (an open GOP's leading frames lack their references after a seek).
  if (resync == Resync::target && pts != AV_NOPTS_VALUE && pts < target_pts) return;
  // Shown at or after the damage: the drain goes on, nothing more is delivered.
  if (after_damage(d)) return;
  if (!d.damage.empty()) {
    decoder_damage(std::move(d.damage), pts == AV_NOPTS_VALUE ? INT64_MIN : pts, d.seq < 0 ? INT64_MAX : d.seq);
    return;
  }
  if (seen_before(d)) return;
  held.push_back(std::move(d));
}

// The decoder gave its last frame: the damage is placed, as far as the
// frames that came out (and those that did not) tell.
void VideoFile::Impl::on_drained() {
  drained = true;
  // Frame threads lose some of libavcodec's concealment flags, and NVDEC
  // sees damage differently: one libavcodec thread decodes the cluster
  // again before it is judged unseen damage.
  if (crc_drain && place_with_one_thread()) return;
  if (crc_drain && damage.empty()) {
    // The decoder saw nothing wrong in the cluster: no frame decoded
    // from it is delivered, nor any shown after one.
    const double at = demux->seconds(clusters->time());
    damaged(fmt::format("the Matroska cluster from {:.3f} s fails its CRC-32 check (damage the decoder did "
                        "not see)", at),
            clusters->time(), clusters->seq() - 1);
  }
  // A frame sent before the damage that never came out: the break is there.
  if (!damage.empty() && damage_pts != INT64_MIN) {
    for (const Sent& p : pending) damage_pts = std::min(damage_pts, p.pts);
    std::erase_if(held, [&](const Decoded& h) { return after_damage(h); });
  }
}

// The decoder wants a packet: the next one of the stream is read and sent;
// or damage the demuxer or the container shows is noted, or the end of the
// file: then the decoder drains.
void VideoFile::Impl::feed() {
  int r = demux->read(pkt);
  if (!demux->skipped().empty() && damage.empty()) {
    if (r >= 0) av_packet_unref(pkt);
    demuxer_skipped();
    return;
  }
  if (r >= 0) clusters->read(pkt->pos, sent);
  if (clusters->failed() && damage.empty() && (r < 0 || clusters->past(pkt->pos))) {
    // Past the damaged cluster: the decoder drains (frame threads report
    // damage frames later); if it finds none, the break is at the cluster.
    if (r >= 0) av_packet_unref(pkt);
    crc_drain = true;
    drain();
    return;
  }
  if (r >= 0) clusters->shown(pkt->pts, pkt->pos);
  if (r == AVERROR_EOF) {
    drain();
    return;
  }
  if (r < 0) {
    damaged(fmt::format("the file cannot be read further ({})", av_error(r)), AV_NOPTS_VALUE);
    return;
  }
  if ((pkt->flags & AV_PKT_FLAG_CORRUPT) || ts_cut) {
    // A packet the container marks corrupt: the last of the file is cut
    // short (the file ends inside it: truncated); one inside the file (an
    // MPEG-TS continuity jump where two streams were joined) goes to the
    // decoder, which judges its data, so a joined stream plays on. An
    // MPEG-TS file that ends inside a transport packet has its last packet
    // cut (FFmpeg does not mark it): the same rule, whatever the decoder
    // makes of the data left.
    if (demux->peek() == AVERROR_EOF) {
      const std::int64_t pts = pkt->pts;
      av_packet_unref(pkt);
      damaged("the file ends inside a frame's data (truncated)", pts);
      return;
    }
  }
  send_packet();
}

// The demuxer skipped data it could not parse, frames with it. Each skipped
// frame comes after every packet sent in decode order, and no frame is
// shown before it is decoded: the frames shown up to the last packet's
// decode time are whole, those after it may have a skipped one before them.
// The rule reads the stream alone, so every decoder and thread count breaks
// at the same frame. Without decode times (the first packets of some
// files), the frames the decoder has put out.
void VideoFile::Impl::demuxer_skipped() {
  std::string why = fmt::format("the demuxer skipped damaged data ({})", demux->skipped());
  if (sent_dts != AV_NOPTS_VALUE) {
    damaged(std::move(why), sent_dts + 1);
  } else {
    damage = std::move(why);
    damage_pts = INT64_MIN;  // the frames already put out (held) are delivered
    drain();
  }
}

// The packet read last to the decoder, noted in `pending`.
void VideoFile::Impl::send_packet() {
  const std::int64_t pts = pkt->pts;
  if ((pkt->flags & AV_PKT_FLAG_DISCARD) != 0) ++discarded;
  if (pts != AV_NOPTS_VALUE) pending.push_back({sent, pts});
  if (pkt->dts != AV_NOPTS_VALUE) sent_dts = pkt->dts;
  while (!pending.empty() && pending.front().seq < sent - kReorder) pending.pop_front();
  ++sent;
  const int r = dec->send(pkt);
  av_packet_unref(pkt);
  if (r == AVERROR(ENOMEM) && leave_nvdec()) return;
  // Before the frame a seek asked for, a packet the decoder rejects is one
  // of the frames dropped (an open GOP's leading B-frames miss their
  // references there): the frames from the target on are judged as they come.
  if (r < 0 && r != AVERROR(EAGAIN) && resync == Resync::target) return;
  // With frame threads the error is an earlier packet's: its place is not known.
  if (r < 0 && r != AVERROR(EAGAIN)) decoder_damage(dec->reason(r), pts);
}

// ----------------------------------------------------------------- VideoFile

VideoFile::VideoFile(const std::string& path, VideoFileOptions opts) : d_(std::make_unique<Impl>()) {
  d_->path = path;
  d_->open(opts);
}

VideoFile::~VideoFile() = default;

const VideoInfo& VideoFile::info() const noexcept { return d_->info; }
int VideoFile::device() const noexcept { return d_->device; }
const std::string& VideoFile::cpu_reason() const noexcept { return d_->cpu_reason; }
VideoFile::Next VideoFile::next(std::shared_ptr<VideoFrame>& out) { return d_->next(out); }
std::int64_t VideoFile::frames() const noexcept { return d_->frames; }
bool VideoFile::seek(std::int64_t index) { return d_->seek(index); }
const FrameIndex& VideoFile::frame_index() { return d_->frame_index(); }
const std::string& VideoFile::error() const noexcept { return d_->error; }

std::string libav_versions() {
  const auto v = [](unsigned x) { return fmt::format("{}.{}.{}", x >> 16, (x >> 8) & 0xff, x & 0xff); };
  return fmt::format("libavformat {}, libavcodec {}, libavutil {}, libswscale {}", v(avformat_version()),
                     v(avcodec_version()), v(avutil_version()), v(swscale_version()));
}

}  // namespace imgpipe::codecs
