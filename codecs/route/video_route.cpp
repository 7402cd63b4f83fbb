#include "codecs/route/video_route.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace imgpipe::codecs {

int chroma_of(const VideoInfo& v) noexcept {
  if (v.monochrome) return 400;
  if (v.chroma_shift_x == 0 && v.chroma_shift_y == 0) return 444;
  if (v.chroma_shift_x == 1 && v.chroma_shift_y == 0) return 422;
  return 420;
}

std::string nvdec_refusal(const VideoInfo& v, const NvdecCaps& caps) {
  const auto named = [&](const NvdecCap& c) { return c.codec == v.codec; };
  if (std::none_of(caps.begin(), caps.end(), named)) return fmt::format("NVDEC cannot decode {}", v.codec);
  if ((v.width | v.height) & 1) return fmt::format("an odd size ({}x{}): the CPU route takes it", v.width, v.height);
  if (v.pixel_format.empty()) return fmt::format("the {} stream does not say its pixel format", v.codec);
  // NVDEC's output is luma and chroma, converted with a YUV matrix.
  if (v.rgb_coded) return fmt::format("RGB-coded {} ({}): the CPU route takes it", v.codec, v.pixel_format);
  const int chroma = chroma_of(v);
  const auto it = std::find_if(caps.begin(), caps.end(), [&](const NvdecCap& c) {
    return named(c) && c.chroma == chroma && c.bit_depth == v.bit_depth;
  });
  const char* sampling = chroma == 400 ? "grey" : chroma == 444 ? "4:4:4" : chroma == 422 ? "4:2:2" : "4:2:0";
  const std::string format = fmt::format("{}-bit {}", v.bit_depth, sampling);
  if (it == caps.end()) return fmt::format("NVDEC cannot decode {} {}", v.codec, format);
  const NvdecCap& c = *it;
  if (v.width > c.max_width || v.height > c.max_height)
    return fmt::format("{}x{} is larger than NVDEC's {}x{} for {}", v.width, v.height, c.max_width, c.max_height,
                       v.codec);
  if (v.width < c.min_width || v.height < c.min_height)
    return fmt::format("{}x{} is smaller than NVDEC's {}x{} for {}", v.width, v.height, c.min_width, c.min_height,
                       v.codec);
  const std::uint64_t mbs = static_cast<std::uint64_t>((v.width + 15) / 16) * static_cast<std::uint64_t>((v.height + 15) / 16);
  if (c.max_macroblocks > 0 && mbs > c.max_macroblocks)
    return fmt::format("{}x{} has more macroblocks than NVDEC's {} for {}", v.width, v.height, c.max_macroblocks,
                       v.codec);
  return {};
}

namespace {
// Files an NVDEC engine decodes at once at full speed: one file's reader
// feeds its engine between pictures (demuxing, parsing, copying frames
// out), so two keep each engine busy (docs/video-decode.md: FFmpeg's 14
// NVDEC processes outran 7 on the 7 engines).
constexpr int kFilesPerEngine = 2;
}  // namespace

VideoRouter::VideoRouter(Options o) : o_(std::move(o)) {
  if (o_.caps.size() != o_.devices.size()) throw std::invalid_argument("VideoRouter: one caps table per device");
  if (o_.devices.empty() && o_.off_reason.empty()) o_.off_reason = "no GPU in the run";
  o_.cpu_slots = std::max(1, o_.cpu_slots);
  if (o_.where != VideoWhere::cpu && o_.off_reason.empty())
    for (const NvdecCaps& caps : o_.caps) {
      int engines = 1;
      for (const NvdecCap& c : caps) engines = std::max(engines, c.engines);
      nvdec_slots_ += kFilesPerEngine * engines;
    }
}

std::int64_t VideoRouter::expected_frames(const VideoInfo& v) {
  if (v.planned_work >= 0) return v.planned_work;
  return v.declared_frames > 0 ? v.declared_frames : 300;  // unknown: ten seconds' worth
}

void VideoRouter::open(Route& r, std::int64_t frames) {
  r.queued += frames;
  ++r.files;
}

void VideoRouter::close(Route& r, std::int64_t left) {
  r.queued = std::max<std::int64_t>(0, r.queued - std::max<std::int64_t>(0, left));
}

int VideoRouter::slots(bool nvdec) const noexcept { return nvdec ? nvdec_slots_ : o_.cpu_slots; }

bool VideoRouter::measured(bool nvdec) const {
  const Route& r = nvdec ? nvdec_ : cpu_;
  return r.worked_s >= 1.0 && r.frames + r.dropped > 0;
}

double VideoRouter::rate_locked(bool nvdec) const {
  const Route& r = nvdec ? nvdec_ : cpu_;
  if (measured(nvdec)) return static_cast<double>(r.frames + r.dropped) / r.worked_s;
  return nvdec ? o_.nvdec_file_prior_fps : o_.cpu_prior_fps / o_.cpu_slots;
}

double VideoRouter::rate(bool nvdec) const {
  const std::lock_guard lock(mu_);
  return rate_locked(nvdec);
}

double VideoRouter::done_in(bool nvdec, std::int64_t frames) const {
  const Route& r = nvdec ? nvdec_ : cpu_;
  const double per_file = rate_locked(nvdec);
  double capacity = per_file * slots(nvdec);
  if (!measured(nvdec))
    capacity = nvdec ? o_.nvdec_prior_fps * static_cast<double>(o_.devices.size()) : o_.cpu_prior_fps;
  const auto f = static_cast<double>(frames);
  return std::max(f / per_file, (static_cast<double>(r.queued) + f) / capacity);
}

void VideoRouter::worked(int device, double seconds) {
  if (seconds <= 0) return;
  const std::lock_guard lock(mu_);
  route(device).worked_s += seconds;
}

VideoRouter::Choice VideoRouter::choose(const VideoInfo& v) {
  const std::lock_guard lock(mu_);
  Choice c;
  const std::int64_t frames = expected_frames(v);
  auto to_cpu = [&](std::string why) {
    c.cpu_reason = std::move(why);
    ++reasons_[c.cpu_reason];
    open(cpu_, frames);
    return c;
  };
  if (o_.where == VideoWhere::cpu) return to_cpu("input.video.where is cpu");
  if (!o_.off_reason.empty()) return to_cpu(o_.off_reason);
  if (o_.orientation && (v.rotation != 0 || v.flip))
    return to_cpu("its display rotation is applied on the CPU route");
  // The first device (round robin from the last) whose engines take it.
  std::string refusal;
  int device = -1;
  for (std::size_t k = 0; k < o_.devices.size() && device < 0; ++k) {
    const std::size_t i = (next_device_ + k) % o_.devices.size();
    std::string why = nvdec_refusal(v, o_.caps[i]);
    if (why.empty()) {
      device = o_.devices[i];
      next_device_ = i + 1;
    } else if (refusal.empty()) {
      refusal = std::move(why);
    }
  }
  if (device < 0) return to_cpu(refusal);
  if (o_.where == VideoWhere::auto_) {
    // Where would it be done first?
    if (done_in(false, frames) < done_in(true, frames)) {
      open(cpu_, frames);
      return c;  // the balance's choice: no reason to report
    }
  }
  c.device = device;
  open(nvdec_, frames);
  return c;
}

void VideoRouter::delivered(int device) {
  const std::lock_guard lock(mu_);
  Route& r = route(device);
  ++r.frames;
  if (r.queued > 0) --r.queued;
}

void VideoRouter::dropped(int device) {
  const std::lock_guard lock(mu_);
  Route& r = route(device);
  ++r.dropped;
  if (r.queued > 0) --r.queued;
}

void VideoRouter::closed(int device, const VideoInfo& v, std::int64_t frames) {
  const std::lock_guard lock(mu_);
  close(route(device), expected_frames(v) - frames);
}

void VideoRouter::fell_back(int device, const VideoInfo& v, const std::string& why) {
  const std::lock_guard lock(mu_);
  const std::int64_t frames = expected_frames(v);
  close(route(device), frames);
  --nvdec_.files;
  ++reasons_[why];
  open(cpu_, frames);
}

void VideoRouter::moved(int device, const VideoInfo& v, std::int64_t frames, const std::string& why) {
  const std::lock_guard lock(mu_);
  const std::int64_t left = std::max<std::int64_t>(0, expected_frames(v) - frames);
  close(route(device), left);
  open(cpu_, left);
  --cpu_.files;  // the file is NVDEC's
  if (!why.empty()) ++reasons_[why];
}

VideoRouter::Figures VideoRouter::figures() const {
  const std::lock_guard lock(mu_);
  return {nvdec_.files, nvdec_.frames, cpu_.files, cpu_.frames, reasons_};
}

}  // namespace imgpipe::codecs
