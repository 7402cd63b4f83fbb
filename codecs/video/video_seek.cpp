// VideoFile's decoding again from elsewhere in the file: seek() (from the
// keyframe the FrameIndex names), and relocate() (a one-thread libavcodec
// decode from the keyframe before the frame delivered last, which places
// damage frame threads or NVDEC found). video_file_impl.hpp has the state.
#include <algorithm>

#include <fmt/format.h>

#include "codecs/video/video_file_impl.hpp"
#include "codecs/video/libav/libav_decoder.hpp"

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

}  // namespace imgpipe::codecs
