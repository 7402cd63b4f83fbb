#include "pack.hpp"

#include <chrono>

#include "codecs/video/video_devices.hpp"
#include "core/fault.hpp"
#include "kernels/trap.hpp"

namespace imgpipe::stages {

Pack::Pack(BatchResources& resources, Dispatch dispatch, const BatchConfig& batch, OnError on_error,
           std::size_t decode_bytes, bool checksummed)
    : Stage("pack", false), res_(resources), dispatch_(dispatch), cfg_(batch), on_error_(on_error),
      decode_bytes_(decode_bytes) {
  // The parts are thirds of a sample in whole words (SampleChecksum). On a
  // GPU the sink's checksum is a kernel: nothing to spare the CPU there.
  const BatchLayout& l = res_.layout();
  sum_samples_ = checksummed && l.devices == std::vector<int>{-1} && !l.device_output && l.out_sample_bytes > 0 &&
                 l.out_sample_bytes % 12 == 0;
}

DeviceContext* Pack::choose_device() {
  auto& devices = res_.devices();
  const std::size_t n = devices.size();
  if (n == 1) return devices[0].get();
  const std::size_t rr = batches_ % n;
  if (dispatch_ == Dispatch::round_robin) return devices[rr].get();
  // least loaded: fewest batches in flight; ties go round robin.
  DeviceContext* best = devices[rr].get();
  for (std::size_t k = 1; k < n; ++k) {
    DeviceContext* d = devices[(rr + k) % n].get();
    if (d->in_flight.load() < best->in_flight.load()) best = d;
  }
  return best;
}

Tally Pack::flush(Work& w) {
  if (current_ && current_->count > 0) {
    // drop_last is about the end of the input; a batch cut by batch.timeout_ms goes out.
    if (cfg_.drop_last && current_->count < cfg_.size && w.kind == Work::Kind::flush) {
      dropped_ += current_->count;
      --current_->dev->in_flight;
      res_.ring().release(current_->slot, current_->dev->stream);
    } else {
      w.batch = current_;
    }
  }
  current_ = nullptr;
  writer_.reset();
  return {0, 0};
}

void Pack::start_batch() {
  const auto t0 = std::chrono::steady_clock::now();
  writer_.emplace(res_.ring().acquire());  // waits for the slot's previous batch
  own_stats().add_wait(std::chrono::steady_clock::now() - t0);
  current_ = res_.slots()[writer_->slot()].get();
  current_->index = batches_;
  current_->dev = choose_device();  // round robin from batches_
  (void)res_.make_room(*current_, 0, 0);  // the device's buffers as large as the slot (it may have grown for another)
  ++batches_;
  ++current_->dev->in_flight;
  current_->count = 0;
  current_->staged_bytes = 0;
  current_->jpegs.clear();
  current_->frame_bytes = 0;
  current_->holds.clear();  // the slot's previous batch is done: its frames go back to their pools
  current_->written.clear();
  current_->direct.clear();
  if (sum_samples_)
    current_->sums.assign(static_cast<std::size_t>(cfg_.size), {});  // never resized while PackCopy writes into it
  else
    current_->sums.clear();
  current_->frames_copied = false;
  current_->then = nullptr;
}

void Pack::stage_at(Work& w, std::size_t bytes) {
  w.dest = {*writer_, current_->staged_bytes};  // PackCopy writes it there
  auto& runs = current_->written;
  if (!runs.empty() && runs.back().first + runs.back().second == current_->staged_bytes)
    runs.back().second += bytes;
  else
    runs.emplace_back(current_->staged_bytes, bytes);
}

namespace {

// The GPU resize starts from the window's box of the image (a u8 frame of
// `frame_width` pixels, 3 channels, dense) and mirrors after it.
void apply_window(kernels::SrcImage& s, const FrameView::Window& g, int frame_width) {
  if (g.width > 0) {
    s.offset += (static_cast<std::size_t>(g.y) * static_cast<std::size_t>(frame_width) + static_cast<std::size_t>(g.x)) * 3;
    s.pitch = static_cast<std::size_t>(frame_width) * 3;
    s.width = g.width;
    s.height = g.height;
  }
  s.flip_x = g.flip_x;
  s.flip_y = g.flip_y;
}

}  // namespace

void Pack::place_direct(Work& w) {
  current_->direct.push_back({current_->staged_bytes, static_cast<const YuvPlanes&>(*w.pixels.out.yuv)});
  ++direct_frames_;
  current_->holds.push_back(std::move(w.pixels.video));  // the decoder's buffer, until the copy is done
}

void Pack::place_gpu_video(Work& w) {
  std::shared_ptr<codecs::VideoFrame> frame = std::move(w.pixels.video);
  DeviceContext& dev = *current_->dev;
  if (current_->images.empty()) throw std::logic_error("pack: an NVDEC frame for a batch the GPU does not resize");
  // Another GPU decoded it: a copy on this one, on the upload stream, which
  // the batch's kernels wait for (frames_copied) whatever the transfer mode.
  // The frame_copy drill takes this path on one GPU, behind a stall.
  const std::int64_t drill_ms = fault::armed_item("frame_copy");
  if (frame->device() != dev.device || drill_ms >= 0) {
    if (drill_ms > 0) kernels::stall_gpu(dev.upload.get(), static_cast<unsigned>(drill_ms));
    std::shared_ptr<codecs::VideoFrame> here = codecs::copy_frame_to(*frame, dev.device, dev.upload);
    current_->buffers().frames_copied.record(dev.upload);
    current_->frames_copied = true;
    current_->holds.push_back(std::move(frame));
    frame = std::move(here);
  }
  kernels::YuvImage img;
  frame->yuv(img);
  kernels::SrcImage& s = current_->images[current_->count];
  s = {0, img.width, img.height, 0, img.plane[0]};
  kernels::SrcYuv y;
  y.format = img.format;
  for (int k = 0; k < 3; ++k) {
    if (!img.plane[k]) continue;
    y.plane[k] = static_cast<std::size_t>(img.plane[k] - img.plane[0]);
    y.pitch[k] = img.pitch[k];
  }
  s.yuv = y;
  s.flip_x = w.pixels.out.gpu.flip_x;  // no box on a YUV frame (the run plan sees to it)
  s.flip_y = w.pixels.out.gpu.flip_y;
  current_->holds.push_back(std::move(frame));
}

void Pack::place_gpu_jpeg(const FrameView& f) {
  // The decoded frame's place among the batch's frames, 256-byte aligned
  // (the GPU ops stage places the batch in the device's frame area); the
  // probe admits only frames that fit a share.
  const std::size_t frame = static_cast<std::size_t>(f.width) * static_cast<std::size_t>(f.height) * 3;
  const std::size_t at = (current_->frame_bytes + 255) & ~std::size_t{255};
  if (at + frame > decode_bytes_) throw std::logic_error("pack: a decoded frame does not fit the device frame area");
  if (current_->dev->frames.get() == nullptr)
    throw std::logic_error("pack: a GPU-route JPEG for a device without a frame area");
  current_->jpegs.push_back({current_->count, current_->staged_bytes, f.bytes, at, f.width, f.height});
  current_->images[current_->count] = {0, f.width, f.height, 0, nullptr};  // data: set when the engines decode it
  apply_window(current_->images[current_->count], f.gpu, f.width);
  current_->frame_bytes = at + frame;
}

Tally Pack::run(Work& w) {
  if (!w.is_sample()) return flush(w);  // end of input, or batch.timeout_ms
  if (w.failed()) {
    failures_.push_back({w.sample.input->path, w.sample.frame, w.sample.error});
    if (log_) log_->failed(failures_.back());
    if (on_error_ == OnError::fail) throw InputError(w.sample.input->path, w.sample.frame, w.sample.error);
    return {0, 0};
  }
  if (!current_) start_batch();
  const FrameView& f = w.pixels.out;
  // A slot that carries less than a full batch grows as its batch needs
  // (staging.slot_bytes at most), while nothing but this batch's own
  // writes (disjoint, earlier) use it.
  if (f.bytes > res_.ring().slot_bytes() - current_->staged_bytes)
    throw std::logic_error("pack: a frame does not fit its staging slot (frame budget violated)");
  if (current_->count >= current_->room || f.bytes > writer_->capacity() - current_->staged_bytes)
    if (auto grown = res_.make_room(*current_, current_->count + 1, current_->staged_bytes + f.bytes)) writer_ = *grown;
  switch (w.route) {
    case Route::gpu_video:  // in device memory already: nothing staged
      place_gpu_video(w);
      break;
    case Route::gpu_jpeg:  // the bitstream is staged; the engines decode it into the frame area
      stage_at(w, f.bytes);
      place_gpu_jpeg(f);
      break;
    case Route::cpu:
      // A video frame in page-locked memory is copied to the device from
      // there by the transfer; anything else is copied into the slot.
      if (f.yuv && w.pixels.video && w.pixels.video->direct() && !res_.ring().zero_copy())
        place_direct(w);
      else
        stage_at(w, f.bytes);
      if (!current_->sums.empty() && w.dest.writer) {
        SampleChecksum& s = current_->sums[static_cast<std::size_t>(current_->count)];
        s = {current_->staged_bytes, 0, {}};
        w.dest.sum = &s;
      }
      if (!current_->images.empty()) {
        kernels::SrcImage& img = current_->images[current_->count];
        img = {current_->staged_bytes, f.width, f.height, 0};
        if (f.yuv) {  // a video frame as decoded: the GPU converts it (flips, no box)
          img.yuv = f.yuv->staged;
          img.flip_x = f.gpu.flip_x;
          img.flip_y = f.gpu.flip_y;
        } else {
          apply_window(img, f.gpu, f.width);
        }
      }
      break;
  }
  current_->staged_bytes += f.bytes;
  SampleId& id = current_->samples[current_->count];
  id.input_index = w.sample.seq;
  id.path = w.sample.input->path;  // reuses the string's capacity
  id.frame = w.sample.frame;
  id.clip = w.sample.clip;
  id.pts = w.sample.pts;
  id.kind = w.kind == Work::Kind::video_frame ? SampleKind::frame : SampleKind::image;
  id.decoded_on_gpu = w.route != Route::cpu;
  current_->t0[current_->count] = w.sample.t0;
  id.label = w.sample.input->label;
  id.geometry = w.sample.geometry;
  ++packed_;
  if (++current_->count == cfg_.size) {
    w.batch = current_;
    current_ = nullptr;
    writer_.reset();
  }
  return {1, 0};
}

Tally PackCopy::run(Work& w) const {
  const FrameView& f = w.pixels.out;
  if (f.one_pass) {  // a video frame from YUV to its tensor, in the slot itself where that is plain memory
    kernels::YuvFusedParams p = *f.one_pass;
    unsigned char* in_place = w.dest.writer->plain_span(w.dest.offset, f.bytes);
    thread_local std::vector<unsigned char> made;
    if (!in_place) made.resize(f.bytes);
    p.dst = in_place ? in_place : made.data();
    const bool sum = w.dest.sum && f.bytes % 12 == 0;
    if (sum) p.sums = w.dest.sum->part;  // summed row by row as they are written
    kernels::yuv_fused_cpu(p);  // checked by the transform stage
    if (sum) w.dest.sum->bytes = f.bytes;
    if (!in_place) w.dest.writer->write(w.dest.offset, made.data(), f.bytes);
    w.pixels.video.reset();  // the decoder's buffer goes back to its pool
  } else if (f.yuv) {  // the planes gathered row by row, dense
    std::size_t at = w.dest.offset;
    for (int k = 0; k < 3; ++k)
      for (int r = 0; r < f.yuv->rows[k]; ++r) {
        w.dest.writer->write(at, f.yuv->src[k] + static_cast<std::size_t>(r) * f.yuv->src_pitch[k],
                             f.yuv->row_bytes[k]);
        at += f.yuv->row_bytes[k];
      }
    w.pixels.video.reset();  // the decoder's buffer goes back to its pool
  } else {
    w.dest.writer->write(w.dest.offset, f.data, f.bytes);
    // Its parts from the frame just copied (cached memory); thirds not in
    // whole words leave it unsummed, and the sink sums the batch.
    if (w.dest.sum && kernels::checksum_thirds(f.data, f.bytes, w.dest.sum->part)) w.dest.sum->bytes = f.bytes;
  }
  w.dest.writer.reset();
  return {1, w.pixels.out.bytes};
}

}  // namespace imgpipe::stages
