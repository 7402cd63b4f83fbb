#include "codecs/video/nvdec/nvdec_decoder.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include <fmt/format.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include "imgpipe/error.hpp"
#include "memory/gpu.hpp"

#if IMGPIPE_HAS_CUDA
// ffnvcodec's loader prints what it cannot load; the reason is ours to give.
#define FFNV_LOG_FUNC(logctx, msg, ...) ((void)(logctx))
#define FFNV_DEBUG_LOG_FUNC(logctx, msg, ...) ((void)(logctx))
#include <dlfcn.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wuseless-cast"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#include <ffnvcodec/dynlink_loader.h>
#pragma GCC diagnostic pop
#endif

namespace imgpipe::codecs {

#if IMGPIPE_HAS_CUDA

namespace {

struct CodecName {
  const char* ffmpeg;
  cudaVideoCodec cuvid;
};
// What nvcuvid's parser reads from FFmpeg's demuxers as they are (VC-1 would
// need its sequence header rebuilt: it goes to the CPU route).
constexpr CodecName kCodecs[] = {
    {"h264", cudaVideoCodec_H264},        {"hevc", cudaVideoCodec_HEVC},         {"vp9", cudaVideoCodec_VP9},
    {"vp8", cudaVideoCodec_VP8},          {"av1", cudaVideoCodec_AV1},           {"mpeg1video", cudaVideoCodec_MPEG1},
    {"mpeg2video", cudaVideoCodec_MPEG2}, {"mpeg4", cudaVideoCodec_MPEG4}};

const CodecName* codec_named(const std::string& name) {
  for (const CodecName& c : kCodecs)
    if (name == c.ffmpeg) return &c;
  return nullptr;
}

// libnvcuvid, loaded once (IMGPIPE_NVDEC=off: absent).
struct Library {
  CuvidFunctions* f = nullptr;
  std::string why;
};

const Library& library() {
  static const Library lib = [] {
    Library l;
    if (const char* v = std::getenv("IMGPIPE_NVDEC"); v && std::string(v) == "off") {
      l.why = "NVDEC is off (IMGPIPE_NVDEC=off)";
    } else if (cuvid_load_functions(&l.f, nullptr) < 0 || !l.f) {
      l.f = nullptr;
      l.why = "cannot load libnvcuvid.so.1 (the NVIDIA driver's video decoder) or one of its functions";
    } else if (!l.f->cuvidGetDecoderCaps) {
      l.why = "libnvcuvid.so.1 has no cuvidGetDecoderCaps (driver too old)";
    }
    return l;
  }();
  return lib;
}

const CuvidFunctions& api() {
  const Library& l = library();
  if (!l.f || !l.why.empty()) throw Error(l.why);
  return *l.f;
}

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw Error(fmt::format("{} failed (CUDA driver error {})", what, static_cast<int>(r)));
}

cudaVideoChromaFormat chroma_format(int chroma) {
  switch (chroma) {
    case 400: return cudaVideoChromaFormat_Monochrome;
    case 422: return cudaVideoChromaFormat_422;
    case 444: return cudaVideoChromaFormat_444;
    default: return cudaVideoChromaFormat_420;
  }
}

// ---------------------------------------------------------- decoder cache

// A decoder as made, with what it can be reconfigured to.
struct Engine {
  CUvideodecoder dec = nullptr;
  int device = -1;
  cudaVideoCodec codec{};
  cudaVideoChromaFormat chroma{};
  int depth_minus8 = 0;
  unsigned surfaces = 0;
  unsigned max_width = 0, max_height = 0;
  CUVIDRECONFIGUREDECODERINFO now{};  // its present size
};

class Cache {
 public:
  // An idle decoder that can take the format, or null.
  std::unique_ptr<Engine> take(int device, cudaVideoCodec codec, cudaVideoChromaFormat chroma, int depth_minus8,
                               unsigned surfaces, unsigned width, unsigned height) {
    const std::lock_guard lock(mu_);
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      Engine& e = **it;
      if (e.device == device && e.codec == codec && e.chroma == chroma && e.depth_minus8 == depth_minus8 &&
          e.surfaces >= surfaces && e.max_width >= width && e.max_height >= height) {
        std::unique_ptr<Engine> out = std::move(*it);
        idle_.erase(it);
        ++reused_;
        return out;
      }
    }
    return nullptr;
  }
  void give(std::unique_ptr<Engine> e) {
    std::unique_ptr<Engine> dropped;
    {
      const std::lock_guard lock(mu_);
      if (holders_ == 0) {  // no run to reuse it
        dropped = std::move(e);
      } else {
        idle_.push_back(std::move(e));
        if (idle_.size() > kMaxIdle) {  // the oldest goes
          dropped = std::move(idle_.front());
          idle_.pop_front();
        }
      }
    }
    if (dropped) destroy(*dropped);
  }
  void hold() {
    const std::lock_guard lock(mu_);
    ++holders_;
  }
  // The last holder gone: the idle decoders are destroyed.
  void release() {
    std::deque<std::unique_ptr<Engine>> dropped;
    {
      const std::lock_guard lock(mu_);
      if (--holders_ == 0) dropped.swap(idle_);
    }
    for (auto& e : dropped) destroy(*e);
  }
  void made() {
    const std::lock_guard lock(mu_);
    ++made_;
  }
  NvdecFigures figures() {
    const std::lock_guard lock(mu_);
    return {static_cast<int>(idle_.size()), made_, reused_};
  }
  static void destroy(Engine& e) {
    gpu::set_device(e.device);
    api().cuvidDestroyDecoder(e.dec);
  }

 private:
  static constexpr std::size_t kMaxIdle = 32;
  std::mutex mu_;
  std::deque<std::unique_ptr<Engine>> idle_;
  int holders_ = 0;  // hold_nvdec_decoders()
  std::uint64_t made_ = 0, reused_ = 0;
};

// Never destroyed (decoders given back during static destruction still find it).
Cache& cache() {
  static Cache* c = new Cache;
  return *c;
}

// ------------------------------------------------------------- frame pool

// Device buffers of one size for decoded frames, reused: freeing device
// memory synchronises the device. A frame's buffer returns here when the
// last holder (the batch that read it) lets it go.
class FramePool : public std::enable_shared_from_this<FramePool> {
 public:
  FramePool(int device, std::size_t bytes) : device_(device), bytes_(bytes) {}
  FramePool(const FramePool&) = delete;
  FramePool& operator=(const FramePool&) = delete;
  ~FramePool() { held_bytes() -= free_.size() * bytes_; }
  // Device bytes held by every pool, in use and idle (nvdec_figures).
  static std::atomic<std::uint64_t>& held_bytes() {
    static std::atomic<std::uint64_t> n{0};
    return n;
  }
  std::shared_ptr<const void> get() {
    gpu::DeviceBuffer b;
    {
      const std::lock_guard lock(mu_);
      if (!free_.empty()) {
        b = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (!b.get()) {
      b = gpu::DeviceBuffer(device_, bytes_);
      held_bytes() += bytes_;
    }
    auto* held = new gpu::DeviceBuffer(std::move(b));
    return {held->get(), [pool = shared_from_this(), held](const void*) {
              {
                const std::lock_guard lock(pool->mu_);
                if (pool->free_.size() < kMaxFree) {
                  pool->free_.push_back(std::move(*held));
                }
              }
              if (held->get()) held_bytes() -= pool->bytes_;
              delete held;
            }};
  }
  // The pool of `device` for buffers of `bytes`, shared by every decoder and
  // frame of that size while any of them holds it. When the last lets go
  // (the run is over), the pool and its idle buffers are freed: a process
  // that runs pipelines one after another over videos of many sizes does
  // not keep device memory for sizes it no longer decodes.
  static std::shared_ptr<FramePool> of(int device, std::size_t bytes) {
    static auto* pools = new std::map<std::pair<int, std::size_t>, std::weak_ptr<FramePool>>;
    static std::mutex mu;
    const std::lock_guard lock(mu);
    std::erase_if(*pools, [](const auto& kv) { return kv.second.expired(); });
    std::weak_ptr<FramePool>& w = (*pools)[{device, bytes}];
    std::shared_ptr<FramePool> p = w.lock();
    if (!p) {
      p = std::make_shared<FramePool>(device, bytes);
      w = p;
    }
    return p;
  }

 private:
  static constexpr std::size_t kMaxFree = 256;
  int device_;
  std::size_t bytes_;
  std::mutex mu_;
  std::vector<gpu::DeviceBuffer> free_;
};

// ---------------------------------------------------------------- decoder

class NvdecDecoder final : public FrameDecoder {
 public:
  NvdecDecoder(const AVStream* st, const VideoInfo& info, int device)
      : filter_(st), info_(info), device_(device), pkt_(av_packet_alloc()) {
    if (!pkt_) throw std::bad_alloc();
    const CodecName* c = codec_named(info.codec);
    if (!c) throw Error(fmt::format("NVDEC cannot decode {}", info.codec));
    codec_ = c->cuvid;
    const AVCodecParameters* par = st->codecpar;
    color_space_ = par->color_space;
    color_range_ = par->color_range;
    pixel_format_ = par->format;
    gpu::set_device(device);
    stream_ = gpu::Stream(device);
    const CuvidFunctions& f = api();
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
    check(f.cuvidCreateVideoParser(&parser_, &p), "cuvidCreateVideoParser");
    // The sequence header the container keeps apart (Annex B SPS/PPS after
    // the filter, MPEG-4's VOL), before the first packet.
    const AVCodecParameters* out = filter_.output();
    if (out->extradata_size > 0 && codec_ != cudaVideoCodec_VP8 && codec_ != cudaVideoCodec_VP9 &&
        codec_ != cudaVideoCodec_AV1) {
      CUVIDSOURCEDATAPACKET d{};
      d.payload = out->extradata;
      d.payload_size = static_cast<tcu_ulong>(out->extradata_size);
      parse(d);
    }
  }

  ~NvdecDecoder() override {
    const CuvidFunctions* f = library().f;
    if (parser_) f->cuvidDestroyVideoParser(parser_);
    if (engine_) cache().give(std::move(engine_));
    av_packet_free(&pkt_);
  }

  int send(const AVPacket* pkt) override {
    if (!error_.empty()) {  // broken: the end is all that is left
      if (!pkt) ended_ = true;
      return pkt ? AVERROR_INVALIDDATA : 0;
    }
    int r = filter_.send(pkt);
    if (r < 0) return fail(fmt::format("the {} bitstream filter rejected a packet", filter_.name()), r);
    for (;;) {
      r = filter_.receive(pkt_);
      if (r == AVERROR(EAGAIN)) return 0;
      if (r == AVERROR_EOF) break;
      if (r < 0) return fail(fmt::format("the {} bitstream filter failed", filter_.name()), r);
      CUVIDSOURCEDATAPACKET d{};
      d.payload = pkt_->data;
      d.payload_size = static_cast<tcu_ulong>(pkt_->size);
      if (pkt_->pts != AV_NOPTS_VALUE) {
        d.flags |= CUVID_PKT_TIMESTAMP;
        d.timestamp = pkt_->pts;
        timed_ = true;
      }
      parse(d);
      av_packet_unref(pkt_);
      if (!error_.empty()) return AVERROR_INVALIDDATA;
    }
    // The end: the parser displays what it still holds.
    CUVIDSOURCEDATAPACKET d{};
    d.flags = CUVID_PKT_ENDOFSTREAM;
    parse(d);
    ended_ = true;
    return error_.empty() ? 0 : AVERROR_INVALIDDATA;
  }

  int receive(Decoded& out) override {
    if (shown_.empty()) {
      if (!error_.empty() && !reported_) {  // once; then the decoder is over
        reported_ = true;
        return AVERROR_INVALIDDATA;
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

 private:
  int fail(std::string why, int code) {
    if (error_.empty()) {
      char buf[AV_ERROR_MAX_STRING_SIZE] = {};
      av_strerror(code, buf, sizeof buf);
      error_ = code == AVERROR_EXTERNAL || code == AVERROR_INVALIDDATA ? std::move(why) : fmt::format("{} ({})", why, buf);
    }
    return code;
  }

  void parse(CUVIDSOURCEDATAPACKET& d) {
    const CUresult r = api().cuvidParseVideoData(parser_, &d);
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
    if (space == AVCOL_SPC_UNSPECIFIED || space == AVCOL_SPC_RESERVED || space == AVCOL_SPC_RGB)
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
    if (!d->engine_) return 0;
    const CUresult r = api().cuvidDecodePicture(d->engine_->dec, pic);
    if (r != CUDA_SUCCESS) {
      if (d->error_.empty()) d->error_ = fmt::format("the NVDEC engine rejected a picture (CUDA driver error {})", static_cast<int>(r));
      return 0;
    }
    return 1;
  }
  // A frame is due for display: copied out now, while the decoder is as it
  // decoded it (a new sequence reconfigures it), and queued for receive().
  static int CUDAAPI on_display(void* self, CUVIDPARSERDISPINFO* disp) {
    auto* d = static_cast<NvdecDecoder*>(self);
    if (!disp || !d->engine_) return 1;
    Decoded out;
    out.pts = d->timed_ ? disp->timestamp : INT64_MIN;
    try {
      out.frame = d->copy_out(*disp, out.damage);
      if (!out.damage.empty()) out.frame.reset();
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
  AVPacket* pkt_;
  cudaVideoCodec codec_{};
  int color_space_ = 0, color_range_ = 0, pixel_format_ = -1;
  gpu::Stream stream_;
  CUvideoparser parser_ = nullptr;
  std::unique_ptr<Engine> engine_;
  std::deque<Decoded> shown_;  // displayed and copied out, not yet received
  kernels::YuvImage layout_;
  std::size_t plane_at_[3] = {0, 0, 0};
  unsigned surface_height_ = 0;  // rows of the mapped frame's luma (its planes follow)
  std::shared_ptr<FramePool> pool_;
  std::string error_;
  bool timed_ = false;
  bool ended_ = false;
  bool reported_ = false;
};

}  // namespace

std::unique_ptr<FrameDecoder> make_nvdec_decoder(const AVStream* st, const VideoInfo& info, int device) {
  return std::make_unique<NvdecDecoder>(st, info, device);
}

NvdecCaps nvdec_caps(int device, std::string& why) {
  NvdecCaps caps;
  try {
    const CuvidFunctions& f = api();
    gpu::set_device(device);
    gpu::Stream make_context_current(device);
    for (const CodecName& c : kCodecs) {
      for (const int chroma : {420, 444}) {
        for (const int depth : {8, 10, 12}) {
          CUVIDDECODECAPS q{};
          q.eCodecType = c.cuvid;
          q.eChromaFormat = chroma_format(chroma);
          q.nBitDepthMinus8 = static_cast<unsigned>(depth - 8);
          if (f.cuvidGetDecoderCaps(&q) != CUDA_SUCCESS || !q.bIsSupported) continue;
          caps.push_back({c.ffmpeg, chroma, depth, q.nMinWidth, q.nMinHeight, static_cast<int>(q.nMaxWidth),
                          static_cast<int>(q.nMaxHeight), q.nMaxMBCount});
        }
      }
    }
    if (caps.empty()) why = fmt::format("NVDEC on device {} decodes none of the codecs", device);
  } catch (const std::exception& e) {
    why = e.what();
    caps.clear();
  }
  return caps;
}

std::shared_ptr<void> hold_nvdec_decoders() {
  cache().hold();
  return {nullptr, [](void*) { cache().release(); }};
}

NvdecFigures nvdec_figures() {
  if (!library().f) return {};
  NvdecFigures n = cache().figures();
  n.frame_bytes = FramePool::held_bytes().load();
  return n;
}

std::shared_ptr<VideoFrame> copy_frame_to(const VideoFrame& f, int device, const gpu::Stream& stream) {
  kernels::YuvImage from;
  if (f.device() < 0 || !f.yuv(from)) throw std::logic_error("copy_frame_to: not a device frame");
  kernels::YuvImage to = from;
  const kernels::YuvFormat& fmt = from.format;
  const int planes = fmt.monochrome ? 1 : fmt.uv_interleaved ? 2 : 3;
  std::size_t at[3] = {0, 0, 0}, bytes = 0;
  for (int k = 0; k < planes; ++k) {
    at[k] = bytes;
    bytes += from.pitch[k] * static_cast<std::size_t>(k == 0 ? from.height : kernels::chroma_height(fmt, from.height));
  }
  std::shared_ptr<const void> mem = FramePool::of(device, bytes)->get();
  auto* base = static_cast<std::uint8_t*>(const_cast<void*>(mem.get()));
  for (int k = 0; k < planes; ++k) {
    const int rows = k == 0 ? from.height : kernels::chroma_height(fmt, from.height);
    to.plane[k] = base + at[k];
    gpu::copy_2d_async(base + at[k], from.pitch[k], from.plane[k], from.pitch[k], from.pitch[k],
                       static_cast<std::size_t>(rows), stream);
  }
  return std::make_shared<VideoFrame>(device, to, std::move(mem));
}

#else  // !IMGPIPE_HAS_CUDA

std::unique_ptr<FrameDecoder> make_nvdec_decoder(const AVStream*, const VideoInfo&, int) {
  throw Error("imgpipe was built without CUDA");
}

NvdecCaps nvdec_caps(int, std::string& why) {
  why = "imgpipe was built without CUDA";
  return {};
}

std::shared_ptr<void> hold_nvdec_decoders() { return nullptr; }

NvdecFigures nvdec_figures() { return {}; }

std::shared_ptr<VideoFrame> copy_frame_to(const VideoFrame&, int, const gpu::Stream&) {
  throw std::logic_error("copy_frame_to: imgpipe was built without CUDA");
}

#endif  // IMGPIPE_HAS_CUDA

}  // namespace imgpipe::codecs
