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

VideoRouter::VideoRouter(Options o) : o_(std::move(o)) {
  if (o_.caps.size() != o_.devices.size()) throw std::invalid_argument("VideoRouter: one caps table per device");
  if (o_.devices.empty() && o_.off_reason.empty()) o_.off_reason = "no GPU in the run";
}

std::int64_t VideoRouter::expected_frames(const VideoInfo& v) {
  if (v.planned_work >= 0) return v.planned_work;
  return v.declared_frames > 0 ? v.declared_frames : 300;  // unknown: ten seconds' worth
}

void VideoRouter::open(Route& r, std::int64_t frames, Clock::time_point now) {
  if (r.open++ == 0) r.since = now;
  r.queued += frames;
  ++r.files;
}

void VideoRouter::close(Route& r, std::int64_t left, Clock::time_point now) {
  r.queued = std::max<std::int64_t>(0, r.queued - std::max<std::int64_t>(0, left));
  if (--r.open == 0) r.busy_s += std::chrono::duration<double>(now - r.since).count();
}

double VideoRouter::rate_locked(bool nvdec, Clock::time_point now) const {
  const Route& r = nvdec ? nvdec_ : cpu_;
  const double prior =
      nvdec ? o_.nvdec_prior_fps * static_cast<double>(std::max<std::size_t>(1, o_.devices.size())) : o_.cpu_prior_fps;
  double busy = r.busy_s;
  if (r.open > 0) busy += std::chrono::duration<double>(now - r.since).count();
  const std::uint64_t decoded = r.frames + r.dropped;
  return busy >= 1.0 && decoded > 0 ? static_cast<double>(decoded) / busy : prior;
}

double VideoRouter::rate(bool nvdec) const {
  const std::lock_guard lock(mu_);
  return rate_locked(nvdec, Clock::now());
}

VideoRouter::Choice VideoRouter::choose(const VideoInfo& v, Clock::time_point now) {
  const std::lock_guard lock(mu_);
  Choice c;
  const std::int64_t frames = expected_frames(v);
  auto to_cpu = [&](std::string why) {
    c.cpu_reason = std::move(why);
    ++reasons_[c.cpu_reason];
    open(cpu_, frames, now);
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
    const double t_gpu = static_cast<double>(nvdec_.queued + frames) / rate_locked(true, now);
    const double t_cpu = static_cast<double>(cpu_.queued + frames) / rate_locked(false, now);
    if (t_cpu < t_gpu) {
      open(cpu_, frames, now);
      return c;  // the balance's choice: no reason to report
    }
  }
  c.device = device;
  open(nvdec_, frames, now);
  return c;
}

void VideoRouter::delivered(int device, Clock::time_point) {
  const std::lock_guard lock(mu_);
  Route& r = route(device);
  ++r.frames;
  if (r.queued > 0) --r.queued;
}

void VideoRouter::dropped(int device, Clock::time_point) {
  const std::lock_guard lock(mu_);
  Route& r = route(device);
  ++r.dropped;
  if (r.queued > 0) --r.queued;
}

void VideoRouter::closed(int device, const VideoInfo& v, std::int64_t frames, Clock::time_point now) {
  const std::lock_guard lock(mu_);
  close(route(device), expected_frames(v) - frames, now);
}

void VideoRouter::fell_back(int device, const VideoInfo& v, const std::string& why, Clock::time_point now) {
  const std::lock_guard lock(mu_);
  const std::int64_t frames = expected_frames(v);
  close(route(device), frames, now);
  --nvdec_.files;
  ++reasons_[why];
  open(cpu_, frames, now);
}

void VideoRouter::moved(int device, const VideoInfo& v, std::int64_t frames, const std::string& why,
                        Clock::time_point now) {
  const std::lock_guard lock(mu_);
  const std::int64_t left = std::max<std::int64_t>(0, expected_frames(v) - frames);
  close(route(device), left, now);
  open(cpu_, left, now);
  --cpu_.files;  // the file is NVDEC's
  if (!why.empty()) ++reasons_[why];
}

VideoRouter::Figures VideoRouter::figures() const {
  const std::lock_guard lock(mu_);
  return {nvdec_.files, nvdec_.frames, cpu_.files, cpu_.frames, reasons_};
}

}  // namespace imgpipe::codecs
