// What the pipeline hands to the caller: one batch of tensors in device memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "imgpipe/geometry.hpp"
#include "imgpipe/types.hpp"

namespace imgpipe {

// What a sample is: the picture of an image file, or a video frame (a video
// file's, a stream's or a camera's, or one pushed with PushSource::push_frame).
// The run report counts the delivered samples by kind (Report::samples).
enum class SampleKind : std::uint8_t { image, frame };

// Where one sample came from, and how its tensor relates to that image.
struct SampleId {
  std::uint64_t input_index = 0;  // position in the discovered input list
  std::string path;
  std::int64_t frame = -1;  // frame index within a video; -1 for still images
  // input.video.clips: the clip this frame belongs to, numbered in its
  // video's plan for the epoch (imgpipe/clips.hpp); -1 without clips.
  std::int64_t clip = -1;
  // The frame's presentation time in seconds from the stream's start
  // (video files; NaN for images, live inputs and pushed frames).
  double pts = std::numeric_limits<double>::quiet_NaN();
  bool decoded_on_gpu = false;  // decoded by the GPU's JPEG engines or NVDEC engines (else on the CPU)
  // The class index (input.labels: folders): the position of the sample's
  // class folder in Report::classes; -1 when unlabelled (input.labels: none,
  // a file directly in a root folder or named explicitly). A pushed item:
  // the label it was pushed with.
  std::int64_t label = -1;
  // Original size, orientation, resize, scale and padding/crop of the tensor
  // (imgpipe/geometry.hpp maps boxes and points back with it).
  SampleGeometry geometry;
  SampleKind kind = SampleKind::image;
};

// A batch resident in device memory (host memory on the host backend).
// On a GPU `data` is always device memory of the batch's device, never the
// host staging slot: in zero-copy mode (staging.transfer: zero_copy) with a
// tensor the CPU made (transform.normalize.where: cpu), the GPU copies the
// mapped, write-combined slot into device memory on `stream` before `ready`:
// no consumer is handed a pointer into memory that the CPU reads uncached.
//
// Lifetime: `data` is valid until the callback that received the batch
// returns. The memory is reused for a later batch by work enqueued on
// `stream`, so work the caller enqueues on `stream` inside the callback may
// safely keep reading it; work on other streams must wait on `ready` and be
// finished (or the data copied) before the callback returns.
struct DeviceBatch {
  void* data = nullptr;  // device memory (ordinary host memory when device == -1)
  std::vector<std::int64_t> shape;  // {N, C, H, W} or {N, H, W, C}
  DType dtype = DType::float32;
  Layout layout = Layout::nchw;
  std::size_t bytes = 0;
  int device = -1;                 // CUDA ordinal; -1 = host backend
  CUstream_st* stream = nullptr;   // cudaStream_t the batch was produced on
  CUevent_st* ready = nullptr;     // cudaEvent_t recorded after the batch's last kernel
  std::uint64_t index = 0;         // batch number, from 0
  // One per frame or image, in tensor order: with clips, clip n's frames are
  // samples[n * clip_length ...], in their order in the clip.
  std::vector<SampleId> samples;
  // input.video.clips: frames per clip (T); 0 without clips. The tensor is
  // then {N, C, T, H, W} (cthw), {N, T, C, H, W} (tchw) or {N, T, H, W, C}
  // (thwc), N = samples.size() / clip_length.
  int clip_length = 0;
  ClipLayout clip_layout = ClipLayout::cthw;

  // Samples: images and frames, or clips (clip_length > 0).
  std::size_t size() const noexcept { return clip_length > 0 ? samples.size() / clip_length : samples.size(); }
  // Clip n's frames (clip_length > 0): samples[n * clip_length + t].
  const SampleId& clip_frame(std::size_t n, int t) const { return samples.at(n * clip_length + t); }
};

// Called once per batch, in input order, from one thread at a time.
using BatchCallback = std::function<void(const DeviceBatch&)>;

}  // namespace imgpipe
