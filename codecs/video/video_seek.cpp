// VideoFile's decoding again from elsewhere in the file: seek() (from the
// keyframe the FrameIndex names, on the decoder the file has: NVDEC's is
// flushed and kept), and relocate() (a one-thread libavcodec decode from
// the keyframe before the frame delivered last, which places damage frame
// threads or NVDEC found). video_file_impl.hpp has the state.
#include <algorithm>

#include <fmt/format.h>
#include <spdlog/logger.h>

#include "codecs/video/video_file_impl.hpp"
#include "codecs/video/libav/libav_decoder.hpp"
#include "imgpipe/log.hpp"

namespace imgpipe::codecs {

// ------------------------------------------------- placing damage again

// Decodes the file again with one thread from the keyframe before the frame
// delivered last (from the start when the container cannot seek there), so
// that damage frame threads found is placed where one thread finds it: the
// first packet the decoder rejects, or the first frame it flags.
bool VideoFile::Impl::relocate() {
  relocated = true;
  return resume(1);
}

// Decodes the file again from elsewhere: the keyframe before the frame
// delivered last (overlap), the keyframe seek_key (target), or the start
// (count). libavcodec decodes from there with `with_threads` threads (a
// file NVDEC decoded moves to the CPU, and the router counts `why`),
// except for a seek (`seeking`: seek() and its retries) on a file NVDEC
// decodes: its decoder is flushed and kept (FrameDecoder::flush), on the
// same engine, and the file stays on the device.
bool VideoFile::Impl::restart(Resync how, int with_threads, const std::string& why, bool seeking) {
  if (how == Resync::overlap) {
    if (!demux->seek_before(last_pts)) return false;
  } else if (how == Resync::target) {
    if (!seek_to_key()) return false;
  } else if (!demux->reopen()) {  // from the start
    return false;
  } else {
    discarded = 0;  // read again
  }
  if (!seeking) wanted.clear();  // every frame again, to place damage or off NVDEC
  if (!(seeking && device >= 0 && dec->flush())) {
    try {
      auto lib = std::make_unique<LibavDecoder>(demux->stream(), demux->decoder(), with_threads, frame_pool);
      hold = lib->frame_threads();
      dec = std::move(lib);
    } catch (const std::exception&) {
      return false;
    }
    // From here the CPU decodes the file: its frames are the CPU route's.
    if (device >= 0 && router) {
      report_dropped();
      router->moved(device, info, decoded, why);
    }
    device = -1;
  }
  held.clear();
  pending.clear();
  sent_dts = AV_NOPTS_VALUE;
  demux->clear_skipped();
  crc_drain = false;
  draining = drained = false;
  if (how != Resync::target) demux->drop_peeked();  // a seek keeps the packet it checked (landed_key)
  resync = how;
  skipping = false;
  skip = frames;
  return true;
}

// Puts the demuxer on the keyframe keys[seek_key], its packet peeked (the
// first read after the seek): by its decode time, then by its presentation
// time (containers index keyframes by either, some shifted: by decode time,
// an MP4 with B-frames lands a keyframe early, and so does a Matroska file
// by the decode time FFmpeg guessed). Where neither lands on it, an earlier
// keyframe of the index does in a stream of one segment (the frames before
// the target are dropped by their times): seek_key becomes that one. False
// when the seek lands on none (an MPEG-TS file: no index), or elsewhere in
// a stream of several segments (times repeat there).
bool VideoFile::Impl::seek_to_key() {
  const FrameIndex::Key& key = findex->keys.at(static_cast<std::size_t>(seek_key));
  const std::int64_t times[2] = {key.dts != INT64_MIN ? key.dts : key.pts, key.pts};
  std::int64_t early = -1, early_time = 0;
  for (int i = 0; i < 2; ++i) {
    if (i == 1 && times[1] == times[0]) break;
    demux->drop_peeked();
    if (!demux->seek_before(times[i])) continue;
    const std::int64_t at = landed_key();
    if (at == seek_key) return true;
    if (at >= 0 && at < seek_key && at > early) {
      early = at;
      early_time = times[i];
    }
  }
  if (early < 0 || findex->segments.size() > 1) return false;
  demux->drop_peeked();
  if (!demux->seek_before(early_time) || landed_key() != early) return false;
  seek_key = early;
  return true;
}

// The keyframe of the index (its place in `keys`) that the packet after a
// seek is: the same position, or the same presentation time where
// positions are unknown; -1 when it is not a keyframe the index lists. The
// packet stays peeked.
std::int64_t VideoFile::Impl::landed_key() {
  if (demux->peek() < 0) return -1;
  const AVPacket* p = demux->peeked();
  if ((p->flags & AV_PKT_FLAG_KEY) == 0) return -1;
  const std::int64_t t = p->pts != AV_NOPTS_VALUE ? p->pts : p->dts;
  for (std::size_t j = 0; j < findex->keys.size(); ++j) {
    const FrameIndex::Key& k = findex->keys[j];
    if (k.pos >= 0 && p->pos >= 0 ? k.pos == p->pos : k.pts == t) return static_cast<std::int64_t>(j);
  }
  return -1;
}

// The frame the index lists next did not come out: decode again, from the
// keyframe before the one decoding started at (from the start after the first).
bool VideoFile::Impl::decode_again_earlier() {
  if (resync == Resync::count || seek_key < 0) return false;  // from the start already: as it decodes
  logger()->debug("'{}': frame {} did not come out of the {} decoder after a seek: decoding again from an earlier keyframe",
                  path, frames, device >= 0 ? "NVDEC" : "libavcodec");
  target_pts = findex->pts[static_cast<std::size_t>(frames)];
  wanted.clear();  // a frame want() left undecoded may be the cause
  seek_key = std::min<std::int64_t>(seek_key, findex->key_of[static_cast<std::size_t>(frames)]) - 1;
  if (seek_key >= 0 && restart(Resync::target, threads, {}, true)) return true;
  seek_key = -1;
  return restart(Resync::count, threads, {}, true);
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
  last_index = -1;
  if (index < 0 || static_cast<std::size_t>(index) >= x.size()) {
    frames = covered = static_cast<std::int64_t>(x.size());
    done = Next::end;
    return false;
  }
  frames = covered = index;
  target_pts = x.pts[static_cast<std::size_t>(index)];
  seek_key = x.key_of[static_cast<std::size_t>(index)];
  seeked = true;
  // Decode times only, with B-frames (an AVI of MPEG-4 part 2 or H.264):
  // neither the frames' times nor a keyframe's place in display order can
  // be told from the packets (FFmpeg's own MPEG-4 AVIs have open GOPs), so
  // the frames are counted from the start, the one order that is known.
  if (x.seeks_from_start) {
    logger()->debug("'{}': decode times only, with B-frames: frame {} is counted from the start", path, index);
    seek_key = -1;
  } else if (restart(Resync::target, threads, {}, true)) {
    return true;
  } else {
    logger()->debug("'{}': the container cannot seek to the keyframe before frame {}: decoding from the start", path,
                    index);
  }
  if (restart(Resync::count, threads, {}, true)) return true;
  broken(fmt::format("the decoder cannot start again at frame {}", index));
  return false;
}

// Decoding on to frame `index` without its frames before: they are dropped
// by their times as before a seek's target (Resync::target), and those no
// frame refers to are not decoded (send_packet). Only where frames are told
// by time (see skip_to() in video_file.hpp). Where frames are held back
// (frame threads, NVDEC), damage the decoder finds is placed by decoding
// again from the frame delivered last (resume() counts from there).
bool VideoFile::Impl::skip_to(std::int64_t index) {
  if (!findex || resync != Resync::none || done != Next::frame) return false;  // damage: below
  const FrameIndex& x = *findex;
  if (x.seeks_from_start || x.segments.size() > 1 || index <= frames || index >= static_cast<std::int64_t>(x.size()))
    return false;
  if (!damage.empty()) return false;
  const std::int64_t target = x.pts[static_cast<std::size_t>(index)];
  // Frames out of the decoder already: those before the target go; the
  // target among them is delivered next as it is.
  bool have = false;
  for (const Decoded& h : held) {
    if (h.pts == AV_NOPTS_VALUE || (h.pts > target && !have)) return false;
    have = have || h.pts == target;
  }
  std::erase_if(held, [&](const Decoded& h) { return h.pts < target; });
  if (!have) {
    resync = Resync::target;
    target_pts = target;
    skipping = true;
    skipped_from = frames;
  }
  frames = covered = index;
  return true;
}

void VideoFile::Impl::want(const std::vector<std::int64_t>& indices) {
  wanted.clear();
  if (!findex || findex->seeks_from_start || findex->segments.size() > 1) return;
  for (const std::int64_t i : indices)
    if (i >= 0 && static_cast<std::size_t>(i) < findex->size()) wanted.push_back(findex->pts[static_cast<std::size_t>(i)]);
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
}

// Damage at `pts` while skipping: the file breaks at the frame it is found
// in (at the first frame not delivered when its time is unknown), as
// decoding each frame would have found it; frames shown before that one are
// still dropped. Damage at or after the target is a seek's.
void VideoFile::Impl::unskip(std::int64_t pts) {
  skipping = false;
  std::int64_t at = skipped_from;
  if (pts != AV_NOPTS_VALUE && pts != INT64_MIN) {
    if (pts >= target_pts) return;
    if (const auto i = findex->frame_at(pts)) at = std::max<std::int64_t>(at, static_cast<std::int64_t>(*i));
  }
  frames = covered = at;
  target_pts = findex->pts[static_cast<std::size_t>(at)];
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
      if (d.pts == target_pts) {  // the frame seek() or skip_to() asked for
        resync = Resync::none;
        skipping = false;
        return false;
      }
      // Shown after it, or no time to tell: the seek is not where the index
      // says (a container's odd timestamps); from the start, by count.
      logger()->debug("'{}': after a seek the {} decoder showed a frame at {} where frame {} (at {}) was due: decoding "
                      "again from the start",
                      path, device >= 0 ? "NVDEC" : "libavcodec", d.pts, frames, target_pts);
      if (!restart(Resync::count, threads, {}, true)) damaged("the decoder lost its place in the file", INT64_MIN);
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

}  // namespace imgpipe::codecs
