// VideoFile: opening a file and choosing its decoder, and the frames from
// decoder to caller under the damage policy (video_file.hpp). Decoding
// again from elsewhere (seek(), relocate()) is video_seek.cpp's; the state
// both share, video_file_impl.hpp.
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
#include "codecs/video/packet_filter.hpp"
#include "codecs/video/video_file_impl.hpp"
#include "codecs/video/libav/libav_decoder.hpp"
#include "codecs/video/nvdec/nvdec_decoder.hpp"
#include "codecs/route/video_route.hpp"

namespace imgpipe::codecs {

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
  if (router && opts.planned_work) info.planned_work = opts.planned_work(frame_index());
  threads = opts.threads;
  skip_unreferenced = opts.skip_unreferenced;
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
  last_index = frames;
  out = std::move(d.frame);
  ++frames;
  ++delivered_total;
  if (router) {
    router->delivered(device);
    report_dropped();
  }
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
      ++decoded;
      take(std::move(d));
    } else if (r == AVERROR_EOF) {
      on_drained();
    } else if (r != AVERROR(EAGAIN)) {
      if (r == AVERROR(ENOMEM) && leave_nvdec()) continue;
      if (resync == Resync::target && !skipping) continue;  // a frame before a seek's target (send_packet)
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
  // Skipping on (skip_to()), damage found there breaks the file.
  if (resync == Resync::target && pts != AV_NOPTS_VALUE && pts < target_pts && (!skipping || d.damage.empty())) return;
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
    if (skipping) unskip(INT64_MIN);
    damage = std::move(why);
    damage_pts = INT64_MIN;  // the frames already put out (held) are delivered
    drain();
  }
}

// The packet read last to the decoder, noted in `pending`.
void VideoFile::Impl::send_packet() {
  const std::int64_t pts = pkt->pts;
  if ((pkt->flags & AV_PKT_FLAG_DISCARD) != 0) ++discarded;
  // A packet shown before a seek's target is not waited for: its frame is
  // dropped whatever it holds, and a decoder may drop it without a word (an
  // open GOP's leading frames after a seek: libavcodec's H.264 and HEVC
  // decoders put none of them out), which would hold the target back for
  // kReorder packets.
  // Its frame may as well not be decoded where no other frame refers to it;
  // so too a frame the caller does not want (want()) that no frame refers
  // to, which then never comes out. One that others refer to is decoded and
  // waited for (damage in it breaks the file where decoding on would).
  const bool before_target = resync == Resync::target && pts != AV_NOPTS_VALUE && pts < target_pts;
  const bool passed =
      before_target || (skip_unreferenced && unwanted(pts) && h264_unreferenced_packet(demux->stream(), *pkt));
  if (pts != AV_NOPTS_VALUE && !passed) pending.push_back({sent, pts});
  if (pkt->dts != AV_NOPTS_VALUE) sent_dts = pkt->dts;
  while (!pending.empty() && pending.front().seq < sent - kReorder) pending.pop_front();
  ++sent;
  dec->skip_unreferenced(skip_unreferenced && passed);
  const int r = dec->send(pkt);
  av_packet_unref(pkt);
  if (r == AVERROR(ENOMEM) && leave_nvdec()) return;
  // Before the frame a seek asked for, a packet the decoder rejects is one
  // of the frames dropped (an open GOP's leading B-frames miss their
  // references there): the frames from the target on are judged as they come.
  if (r < 0 && r != AVERROR(EAGAIN) && resync == Resync::target && !skipping) return;
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
// The time a file spends decoding is its route's measure (VideoRouter::worked).
VideoFile::Next VideoFile::next(std::shared_ptr<VideoFrame>& out) {
  const Impl::Timed timed(*d_);
  return d_->next(out);
}
std::int64_t VideoFile::frames() const noexcept { return d_->frames; }
std::int64_t VideoFile::decoded() const noexcept { return d_->decoded; }
bool VideoFile::seek(std::int64_t index) {
  const Impl::Timed timed(*d_);
  return d_->seek(index);
}
bool VideoFile::skip_to(std::int64_t index) { return d_->skip_to(index); }
void VideoFile::want(const std::vector<std::int64_t>& indices) { d_->want(indices); }
const FrameIndex& VideoFile::frame_index() { return d_->frame_index(); }
bool VideoFile::seeks_from_start() { return d_->frame_index().seeks_from_start; }
const std::string& VideoFile::error() const noexcept { return d_->error; }

std::string libav_versions() {
  const auto v = [](unsigned x) { return fmt::format("{}.{}.{}", x >> 16, (x >> 8) & 0xff, x & 0xff); };
  return fmt::format("libavformat {}, libavcodec {}, libavutil {}, libswscale {}", v(avformat_version()),
                     v(avcodec_version()), v(avutil_version()), v(swscale_version()));
}

}  // namespace imgpipe::codecs
