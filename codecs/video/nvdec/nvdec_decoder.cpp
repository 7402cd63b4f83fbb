#include "codecs/video/nvdec/nvdec_decoder.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include "core/fault.hpp"
#include "imgpipe/error.hpp"
#include "memory/gpu.hpp"
#include "codecs/video/packet_filter.hpp"
#include "codecs/video/nvdec/cuvid.hpp"
#include "codecs/video/nvdec/nvdec_cache.hpp"

namespace imgpipe::codecs {

#if IMGPIPE_HAS_CUDA

namespace {

using nvdec::api;
using nvdec::cache;
using nvdec::check;
using nvdec::Engine;
using nvdec::FramePool;
using nvdec::library;

// ---------------------------------------------------------------- decoder

struct PacketFree {
  void operator()(AVPacket* p) const noexcept { av_packet_free(&p); }
};

// The parser, destroyed with the decoder (or when its constructor throws).
struct ParserFree {
  void operator()(void* p) const noexcept {
    if (p && library().f) library().f->cuvidDestroyVideoParser(p);
  }
};

// Every nvcuvid call runs in the decoder's context: its device's primary
// context (where the decoder, its stream and its frame memory were made),
// made current by a CurrentDeviceGuard for the call and the caller's device
// and context restored after it, whatever thread calls and whatever it had
// current. Each entry point (constructor, send) holds one; the parser's
// callbacks run inside send.

class NvdecDecoder final : public FrameDecoder {
 public:
  NvdecDecoder(const AVStream* st, const VideoInfo& info, int device)
      : filter_(st), info_(info), device_(device), pkt_(av_packet_alloc()) {
    if (!pkt_) throw std::bad_alloc();
    const nvdec::CodecName* c = nvdec::codec_named(info.codec);
    if (!c) throw Error(fmt::format("NVDEC cannot decode {}", info.codec));
    codec_ = c->cuvid;
    const AVCodecParameters* par = st->codecpar;
    color_space_ = par->color_space;
    color_range_ = par->color_range;
    pixel_format_ = par->format;
    const gpu::CurrentDeviceGuard bind(device);
    stream_ = gpu::Stream(device);
    start_parser();
  }

  // Never throws: Cache::give and its destroy do not (nvdec_cache.hpp).
  ~NvdecDecoder() override {
    parser_.reset();
    if (engine_) cache().give(std::move(engine_));
  }

  int send(const AVPacket* pkt) override {
    if (!error_.empty()) {  // broken: the end is all that is left
      if (!pkt) ended_ = true;
      return pkt ? error_code() : 0;
    }
    std::optional<gpu::CurrentDeviceGuard> bind;
    try {
      bind.emplace(device_);
    } catch (const std::exception& e) {
      return fail(fmt::format("NVDEC's device {} cannot be made current ({})", device_, e.what()), AVERROR_EXTERNAL);
    }
    if (pkt && leading_after_flush(*pkt)) return 0;
    int r = filter_.send(pkt);
    if (r < 0) return fail(fmt::format("the {} bitstream filter rejected a packet", filter_.name()), r);
    for (;;) {
      r = filter_.receive(pkt_.get());
      if (r == AVERROR(EAGAIN)) return 0;
      if (r == AVERROR_EOF) break;
      if (r < 0) return fail(fmt::format("the {} bitstream filter failed", filter_.name()), r);
      // Not given to the parser at all: it never decodes nor displays the
      // picture, as libavcodec puts out no frame for one it skips.
      if (skip_unreferenced_ && h264_unreferenced(pkt_->data, static_cast<std::size_t>(pkt_->size))) {
        av_packet_unref(pkt_.get());
        continue;
      }
      CUVIDSOURCEDATAPACKET d{};
      d.payload = pkt_->data;
      d.payload_size = static_cast<tcu_ulong>(pkt_->size);
      if (pkt_->pts != AV_NOPTS_VALUE) {
        d.flags |= CUVID_PKT_TIMESTAMP;
        d.timestamp = pkt_->pts;
        timed_ = true;
        // A packet the container cuts (an MP4 edit list): decoded, its frame
        // not shown, as libavcodec drops a frame decoded from such a packet.
        if ((pkt_->flags & AV_PKT_FLAG_DISCARD) != 0) cut_.push_back(pkt_->pts);
      }
      parse(d);
      av_packet_unref(pkt_.get());
      if (!error_.empty()) return error_code();
    }
    // The end: the parser displays what it still holds.
    CUVIDSOURCEDATAPACKET d{};
    d.flags = CUVID_PKT_ENDOFSTREAM;
    parse(d);
    ended_ = true;
    return error_.empty() ? 0 : error_code();
  }

  int receive(Decoded& out) override {
    if (shown_.empty()) {
      if (!error_.empty() && !reported_) {  // once; then the decoder is over
        reported_ = true;
        return error_code();
      }
      return ended_ || !error_.empty() ? AVERROR_EOF : AVERROR(EAGAIN);
    }
    out = std::move(shown_.front());
    shown_.pop_front();
    return 0;
  }

  std::string reason(int code) const override {
    if (!error_.empty()) return error_;
    char buf[AV_ERROR_MAX_STRING_SIZE] = {};
    av_strerror(code, buf, sizeof buf);
    return fmt::format("NVDEC failed ({})", buf);
  }

  // H.264 only, as the CPU route (LibavDecoder::skip_unreferenced).
  void skip_unreferenced(bool on) override { skip_unreferenced_ = on && codec_ == cudaVideoCodec_H264; }

  // A seek: the parser is made again (a new one knows nothing of the
  // pictures before: no references, no display queue, no picture half
  // read), the bitstream filter flushed (it puts the parameter sets before
  // the next keyframe again), the frames copied out and not yet received
  // dropped, and damage found before forgotten. The engine is kept: the new
  // parser's sequence callback finds that it fits the stream (sequence():
  // the same size, so resize() changes nothing), and no decoder is taken
  // from the cache or made. Not after NVDEC's frame memory ran out (the
  // file goes on on the CPU route).
  bool flush() override {
    if (out_of_memory_) return false;
    std::optional<gpu::CurrentDeviceGuard> bind;
    try {
      bind.emplace(device_);
    } catch (const std::exception&) {
      return false;
    }
    flushing_ = true;  // what the old parser may still call back with is dropped
    parser_.reset();
    flushing_ = false;
    shown_.clear();
    cut_.clear();
    after_flush_ = codec_ == cudaVideoCodec_HEVC;
    flush_key_pts_ = AV_NOPTS_VALUE;
    std::fill(decoded_.begin(), decoded_.end(), 0);
    filter_.flush();
    error_.clear();
    ended_ = reported_ = false;
    try {
      start_parser();
    } catch (const std::exception& e) {
      error_ = e.what();
      return false;
    }
    return error_.empty();
  }

 private:
  // After a seek (flush), an HEVC keyframe's leading pictures (shown before
  // it, decoded after it: an open GOP's RASL pictures, whose references lie
  // before the keyframe) are not sent: they precede the seek's target, and
  // a parser that starts at a CRA picture cannot decode them (docs/video.md,
  // "Frame-accurate seeking"). HEVC puts every leading picture before the
  // trailing ones in decode order, and no trailing picture refers to one.
  bool leading_after_flush(const AVPacket& pkt) {
    if (!after_flush_ || pkt.pts == AV_NOPTS_VALUE) return false;
    if (flush_key_pts_ == AV_NOPTS_VALUE) {
      if ((pkt.flags & AV_PKT_FLAG_KEY) == 0) {
        after_flush_ = false;  // not started at a keyframe: everything is sent
        return false;
      }
      flush_key_pts_ = pkt.pts;
      return false;
    }
    if (pkt.pts < flush_key_pts_) return true;
    after_flush_ = false;  // the first trailing picture: the leading ones are over
    return false;
  }

  // The parser (at the start, and again at each flush), and the sequence
  // header the container keeps apart (Annex B SPS/PPS after the filter,
  // MPEG-4's VOL) before the first packet. In the decoder's context.
  void start_parser() {
    CUVIDPARSERPARAMS p{};
    p.CodecType = codec_;
    p.ulMaxNumDecodeSurfaces = 1;  // the sequence callback says how many
    p.ulClockRate = 0;
    p.ulErrorThreshold = 0;  // a damaged picture is not decoded (its frame is the break)
    p.ulMaxDisplayDelay = 4;  // decoding runs a few pictures ahead of the copies
    p.pUserData = this;
    p.pfnSequenceCallback = &NvdecDecoder::on_sequence;
    p.pfnDecodePicture = &NvdecDecoder::on_decode;
    p.pfnDisplayPicture = &NvdecDecoder::on_display;
    CUvideoparser made = nullptr;
    check(api().cuvidCreateVideoParser(&made, &p), "cuvidCreateVideoParser");
    parser_.reset(made);
    const AVCodecParameters* out = filter_.output();
    if (out->extradata_size > 0 && codec_ != cudaVideoCodec_VP8 && codec_ != cudaVideoCodec_VP9 &&
        codec_ != cudaVideoCodec_AV1) {
      CUVIDSOURCEDATAPACKET d{};
      d.payload = out->extradata;
      d.payload_size = static_cast<tcu_ulong>(out->extradata_size);
      parse(d);
    }
  }

  // A broken decoder's code: ENOMEM when NVDEC's frame memory was full (the
  // file can go on on the CPU route), else damaged data.
  int error_code() const noexcept { return out_of_memory_ ? AVERROR(ENOMEM) : AVERROR_INVALIDDATA; }

  int fail(std::string why, int code) {
    if (error_.empty()) {
      char buf[AV_ERROR_MAX_STRING_SIZE] = {};
      av_strerror(code, buf, sizeof buf);
      error_ = code == AVERROR_EXTERNAL || code == AVERROR_INVALIDDATA ? std::move(why) : fmt::format("{} ({})", why, buf);
    }
    return code;
  }

  void parse(CUVIDSOURCEDATAPACKET& d) {
    const CUresult r = api().cuvidParseVideoData(parser_.get(), &d);
    if (r != CUDA_SUCCESS && error_.empty())
      error_ = fmt::format("NVDEC's {} parser rejected the data (CUDA driver error {})", info_.codec, static_cast<int>(r));
  }

  // The engines' verdict on a decoded picture: empty when whole.
  std::string status_of(int picture) {
    CUVIDGETDECODESTATUS s{};
    const CUresult r = api().cuvidGetDecodeStatus(engine_->dec, picture, &s);
    if (r != CUDA_SUCCESS) return {};  // not reported for this codec: the parser's checks stand
    if (s.decodeStatus == cuvidDecodeStatus_Error) return "the NVDEC engine reported a decode error in it";
    if (s.decodeStatus == cuvidDecodeStatus_Error_Concealed) return "the NVDEC engine concealed damage in it";
    return {};
  }

  // Maps the frame, copies its planes into a pool buffer on the stream and
  // unmaps it; `damage` gets the engines' verdict, asked once the copy is
  // done (before, the picture may still be decoding: no verdict yet).
  std::shared_ptr<VideoFrame> copy_out(const CUVIDPARSERDISPINFO& disp, std::string& damage) {
    const CuvidFunctions& f = api();
    CUVIDPROCPARAMS proc{};
    proc.progressive_frame = disp.progressive_frame;
    proc.top_field_first = disp.top_field_first;
    proc.unpaired_field = disp.repeat_first_field < 0;
    proc.output_stream = stream_.get();
    CUdeviceptr src = 0;
    unsigned int pitch = 0;
    check(f.cuvidMapVideoFrame(engine_->dec, disp.picture_index, &src, &pitch, &proc), "cuvidMapVideoFrame");
    kernels::YuvImage img = layout_;
    std::shared_ptr<const void> mem;
    try {
      mem = pool_->get();
      auto* base = static_cast<std::uint8_t*>(const_cast<void*>(mem.get()));
      const std::size_t src_pitch = pitch;
      const auto* from = reinterpret_cast<const std::uint8_t*>(src);
      const int planes = layout_.format.uv_interleaved ? 2 : 3;
      for (int k = 0; k < planes; ++k) {
        const int rows = k == 0 ? img.height : kernels::chroma_height(img.format, img.height);
        const std::size_t row_bytes = static_cast<std::size_t>(k == 0 ? img.width : kernels::chroma_width(img.format, img.width)) *
                                      img.format.bytes * (k == 1 && img.format.uv_interleaved ? 2 : 1);
        gpu::copy_2d_async(base + plane_at_[k], img.pitch[k], from + static_cast<std::size_t>(k) * src_pitch * surface_height_,
                           src_pitch, row_bytes, static_cast<std::size_t>(rows), stream_);
        img.plane[k] = base + plane_at_[k];
      }
      stream_.synchronize();
      damage = status_of(disp.picture_index);
    } catch (...) {
      f.cuvidUnmapVideoFrame(engine_->dec, src);
      throw;
    }
    check(f.cuvidUnmapVideoFrame(engine_->dec, src), "cuvidUnmapVideoFrame");
    return std::make_shared<VideoFrame>(device_, img, std::move(mem));
  }

  // A new sequence (the first, or a change): a decoder for it, and the
  // frames' layout. Returns the decode surfaces for the parser, 0 to stop.
  int sequence(const CUVIDEOFORMAT& fmt) {
    const int depth = fmt.bit_depth_luma_minus8 + 8;
    const unsigned width = static_cast<unsigned>(fmt.display_area.right - fmt.display_area.left);
    const unsigned height = static_cast<unsigned>(fmt.display_area.bottom - fmt.display_area.top);
    const unsigned surfaces = std::min(32u, static_cast<unsigned>(fmt.min_num_decode_surfaces) + 6u);
    // The stream may say more than the container did. What NVDEC cannot
    // output is refused here; a size or depth beyond the engines fails when
    // the decoder is made (cuvidCreateDecoder's error, below).
    if (fmt.chroma_format == cudaVideoChromaFormat_Monochrome || fmt.chroma_format == cudaVideoChromaFormat_422) {
      error_ = fmt::format("NVDEC cannot output {} frames",
                           fmt.chroma_format == cudaVideoChromaFormat_Monochrome ? "grey" : "4:2:2");
      return 0;
    }
    if ((width | height) & 1) {
      error_ = fmt::format("NVDEC does not output an odd frame size ({}x{})", width, height);
      return 0;
    }
    // G, B and R planes (the router refuses what the container says is RGB;
    // this is a stream that says so itself): a YUV matrix would be applied.
    if (fmt.chroma_format == cudaVideoChromaFormat_444 && rgb_coded(fmt)) {
      error_ = "NVDEC cannot output RGB-coded frames (matrix coefficients: identity)";
      return 0;
    }
    try {
      if (engine_ && engine_->depth_minus8 == fmt.bit_depth_luma_minus8 && engine_->chroma == fmt.chroma_format &&
          engine_->max_width >= fmt.coded_width && engine_->max_height >= fmt.coded_height &&
          engine_->surfaces >= surfaces) {
        resize(*engine_, fmt, width, height);
      } else {
        if (engine_) cache().give(std::move(engine_));
        engine_ = cache().take(device_, codec_, fmt.chroma_format, fmt.bit_depth_luma_minus8, surfaces,
                               fmt.coded_width, fmt.coded_height);
        if (engine_) resize(*engine_, fmt, width, height);
        else engine_ = make(fmt, surfaces, width, height);
      }
    } catch (const std::exception& e) {
      error_ = e.what();
      return 0;
    }
    describe(fmt, depth, width, height);
    return static_cast<int>(engine_->surfaces);
  }

  // The container says RGB, or it says nothing and the stream's colour
  // description (present: its primaries are not the reserved 0) has the
  // identity matrix.
  bool rgb_coded(const CUVIDEOFORMAT& fmt) const noexcept {
    if (color_space_ == AVCOL_SPC_RGB) return true;
    const auto& v = fmt.video_signal_description;
    return (color_space_ == AVCOL_SPC_UNSPECIFIED || color_space_ == AVCOL_SPC_RESERVED) && v.matrix_coefficients == 0 &&
           v.color_primaries != 0;
  }

  static CUVIDRECONFIGUREDECODERINFO size_of(const CUVIDEOFORMAT& fmt, unsigned width, unsigned height, unsigned surfaces) {
    CUVIDRECONFIGUREDECODERINFO r{};
    r.ulWidth = fmt.coded_width;
    r.ulHeight = fmt.coded_height;
    r.ulTargetWidth = width;
    r.ulTargetHeight = height;
    r.ulNumDecodeSurfaces = surfaces;
    r.display_area.left = static_cast<short>(fmt.display_area.left);
    r.display_area.top = static_cast<short>(fmt.display_area.top);
    r.display_area.right = static_cast<short>(fmt.display_area.right);
    r.display_area.bottom = static_cast<short>(fmt.display_area.bottom);
    return r;
  }

  void resize(Engine& e, const CUVIDEOFORMAT& fmt, unsigned width, unsigned height) {
    CUVIDRECONFIGUREDECODERINFO r = size_of(fmt, width, height, e.surfaces);
    if (std::memcmp(&r, &e.now, sizeof r) == 0) return;
    check(api().cuvidReconfigureDecoder(e.dec, &r), "cuvidReconfigureDecoder");
    e.now = r;
  }

  std::unique_ptr<Engine> make(const CUVIDEOFORMAT& fmt, unsigned surfaces, unsigned width, unsigned height) {
    auto e = std::make_unique<Engine>();
    e->device = device_;
    e->codec = codec_;
    e->chroma = fmt.chroma_format;
    e->depth_minus8 = fmt.bit_depth_luma_minus8;
    e->surfaces = surfaces;
    // Room for the common sizes up to 1080p, so that later files reuse it.
    e->max_width = std::max(fmt.coded_width, 1920u);
    e->max_height = std::max(fmt.coded_height, 1088u);
    CUVIDDECODECREATEINFO c{};
    c.ulWidth = fmt.coded_width;
    c.ulHeight = fmt.coded_height;
    c.ulNumDecodeSurfaces = surfaces;
    c.CodecType = codec_;
    c.ChromaFormat = fmt.chroma_format;
    c.ulCreationFlags = cudaVideoCreate_PreferCUVID;
    c.bitDepthMinus8 = fmt.bit_depth_luma_minus8;
    c.ulMaxWidth = e->max_width;
    c.ulMaxHeight = e->max_height;
    c.display_area.left = static_cast<short>(fmt.display_area.left);
    c.display_area.top = static_cast<short>(fmt.display_area.top);
    c.display_area.right = static_cast<short>(fmt.display_area.right);
    c.display_area.bottom = static_cast<short>(fmt.display_area.bottom);
    const bool deep = fmt.bit_depth_luma_minus8 > 0;
    c.OutputFormat = fmt.chroma_format == cudaVideoChromaFormat_444
                         ? (deep ? cudaVideoSurfaceFormat_YUV444_16Bit : cudaVideoSurfaceFormat_YUV444)
                         : (deep ? cudaVideoSurfaceFormat_P016 : cudaVideoSurfaceFormat_NV12);
    c.DeinterlaceMode = cudaVideoDeinterlaceMode_Weave;  // fields woven, as libavcodec outputs them
    c.ulTargetWidth = width;
    c.ulTargetHeight = height;
    c.ulNumOutputSurfaces = 2;  // each frame is copied out and unmapped at once
    gpu::set_device(device_);
    check(api().cuvidCreateDecoder(&e->dec, &c), "cuvidCreateDecoder");
    e->now = size_of(fmt, width, height, surfaces);
    cache().made();
    return e;
  }

  // The layout of the frames copied out, and their pool.
  void describe(const CUVIDEOFORMAT& fmt, int depth, unsigned width, unsigned height) {
    kernels::YuvFormat f;
    f.bits = depth;
    f.bytes = depth > 8 ? 2 : 1;
    f.shift = depth > 8 ? 16 - depth : 0;  // P016: the bits at the top
    const bool planar = fmt.chroma_format == cudaVideoChromaFormat_444;
    f.chroma_shift_x = f.chroma_shift_y = planar ? 0 : 1;
    f.uv_interleaved = !planar;
    // The container's or stream's tags (as libavcodec's frames carry them),
    // else the engines' reading of the stream's.
    int space = color_space_;
    if (space == AVCOL_SPC_UNSPECIFIED || space == AVCOL_SPC_RESERVED)
      space = fmt.video_signal_description.matrix_coefficients;
    f.matrix = matrix_of(space, static_cast<int>(width), static_cast<int>(height));
    const bool full = color_range_ == AVCOL_RANGE_UNSPECIFIED ? fmt.video_signal_description.video_full_range_flag != 0
                                                               : is_full_range(color_range_, pixel_format_);
    f.range = full ? kernels::ColorRange::full : kernels::ColorRange::limited;
    layout_ = {};
    layout_.width = static_cast<int>(width);
    layout_.height = static_cast<int>(height);
    layout_.format = f;
    std::size_t at = 0;
    const int planes = planar ? 3 : 2;
    for (int k = 0; k < planes; ++k) {
      const std::size_t row = static_cast<std::size_t>(k == 0 ? width : kernels::chroma_width(f, static_cast<int>(width))) *
                              f.bytes * (k == 1 && !planar ? 2 : 1);
      layout_.pitch[k] = (row + 255) & ~std::size_t{255};
      plane_at_[k] = at;
      at += layout_.pitch[k] * static_cast<std::size_t>(k == 0 ? height : kernels::chroma_height(f, static_cast<int>(height)));
    }
    surface_height_ = height;
    pool_ = FramePool::of(device_, at);
  }

  static int CUDAAPI on_sequence(void* self, CUVIDEOFORMAT* fmt) {
    return static_cast<NvdecDecoder*>(self)->sequence(*fmt);
  }
  static int CUDAAPI on_decode(void* self, CUVIDPICPARAMS* pic) {
    auto* d = static_cast<NvdecDecoder*>(self);
    if (d->flushing_) return 1;  // a parser being dropped (flush): nothing more is decoded
    if (!d->engine_) return 0;
    const auto idx = static_cast<std::size_t>(pic->CurrPicIdx);
    if (idx >= d->decoded_.size()) {
      if (d->error_.empty()) d->error_ = fmt::format("NVDEC's parser named decode surface {}", pic->CurrPicIdx);
      return 0;
    }
    d->decoded_[idx] = 0;
    if (fault::hit("nvdec_skip", d->pictures_++)) return 1;  // the drill: left undecoded, as a damaged picture
    const CUresult r = api().cuvidDecodePicture(d->engine_->dec, pic);
    if (r != CUDA_SUCCESS) {
      if (d->error_.empty()) d->error_ = fmt::format("the NVDEC engine rejected a picture (CUDA driver error {})", static_cast<int>(r));
      return 0;
    }
    d->decoded_[idx] = 1;
    return 1;
  }
  // A frame is due for display: copied out now, while the decoder is as it
  // decoded it (a new sequence reconfigures it), and queued for receive().
  static int CUDAAPI on_display(void* self, CUVIDPARSERDISPINFO* disp) {
    auto* d = static_cast<NvdecDecoder*>(self);
    if (!disp || !d->engine_ || d->flushing_) return 1;
    Decoded out;
    out.pts = d->timed_ ? disp->timestamp : INT64_MIN;
    const auto idx = static_cast<std::size_t>(disp->picture_index);
    if (d->timed_) {  // an edit list's cut: not shown, whatever it holds
      if (const auto cut = std::find(d->cut_.begin(), d->cut_.end(), disp->timestamp); cut != d->cut_.end()) {
        d->cut_.erase(cut);
        if (idx < d->decoded_.size()) d->decoded_[idx] = 0;
        return 1;
      }
    }
    if (idx >= d->decoded_.size() || !d->decoded_[idx]) {
      // Its surface holds an earlier picture (or nothing): not delivered.
      out.damage = "NVDEC's parser displayed a picture it had not decoded (damaged data)";
      d->shown_.push_back(std::move(out));
      return 1;
    }
    d->decoded_[idx] = 0;
    try {
      out.frame = d->copy_out(*disp, out.damage);
      if (!out.damage.empty()) out.frame.reset();
    } catch (const nvdec::FrameMemoryFull& e) {
      if (d->error_.empty()) {
        d->error_ = e.what();
        d->out_of_memory_ = true;
      }
      return 0;
    } catch (const std::exception& e) {
      if (d->error_.empty()) d->error_ = e.what();
      return 0;
    }
    d->shown_.push_back(std::move(out));
    return 1;
  }

  PacketFilter filter_;
  VideoInfo info_;
  int device_;
  std::unique_ptr<AVPacket, PacketFree> pkt_;
  cudaVideoCodec codec_{};
  int color_space_ = 0, color_range_ = 0, pixel_format_ = -1;
  gpu::Stream stream_;
  std::unique_ptr<void, ParserFree> parser_;
  std::unique_ptr<Engine> engine_;
  std::deque<Decoded> shown_;  // displayed and copied out, not yet received
  std::vector<std::int64_t> cut_;  // times of the packets an edit list cuts whose frames are not yet displayed
  bool after_flush_ = false;                     // leading_after_flush() is looking
  bool skip_unreferenced_ = false;               // the packets sent now: H.264 non-reference pictures left out
  std::int64_t flush_key_pts_ = AV_NOPTS_VALUE;  // the keyframe the parser started at after a flush
  kernels::YuvImage layout_;
  std::size_t plane_at_[3] = {0, 0, 0};
  unsigned surface_height_ = 0;  // rows of the mapped frame's luma (its planes follow)
  std::shared_ptr<FramePool> pool_;
  std::string error_;
  bool out_of_memory_ = false;  // error_ is NVDEC's frame memory running out
  // Per decode surface: decoded since it was last displayed. A picture the
  // parser displays without having had it decoded (a damaged one it skipped,
  // ulErrorThreshold 0) holds an earlier picture: it is the break.
  std::vector<unsigned char> decoded_ = std::vector<unsigned char>(64, 0);
  std::uint64_t pictures_ = 0;  // pictures handed to the decode callback (the nvdec_skip drill counts them)
  bool timed_ = false;
  bool ended_ = false;
  bool flushing_ = false;  // flush() is dropping the parser
  bool reported_ = false;
};

}  // namespace

std::unique_ptr<FrameDecoder> make_nvdec_decoder(const AVStream* st, const VideoInfo& info, int device) {
  return std::make_unique<NvdecDecoder>(st, info, device);
}

#else  // !IMGPIPE_HAS_CUDA

std::unique_ptr<FrameDecoder> make_nvdec_decoder(const AVStream*, const VideoInfo&, int) {
  throw Error("imgpipe was built without CUDA");
}

#endif  // IMGPIPE_HAS_CUDA

}  // namespace imgpipe::codecs
