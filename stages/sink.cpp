#include "sink.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/geometry_json.hpp"
#include "dump_folder.hpp"
#include "kernels/checksum.hpp"

namespace imgpipe::stages {

Sink::Sink(const SinkConfig& cfg, const ShardSpec& shard, memory::StagingRing& ring, const BatchCallback& callback,
           BatchHandoff handoff)
    : Stage("sink", false), cfg_(cfg), folder_(dump_folder(cfg.dir, shard).string()), ring_(ring),
      callback_(callback), handoff_(std::move(handoff)) {
  if (cfg_.type == SinkType::dump) {
    std::error_code ec;
    std::filesystem::create_directories(folder_, ec);
    if (ec) throw Error("sink.dir: cannot create '" + folder_ + "': " + ec.message());
    const std::string path = (std::filesystem::path(folder_) / "manifest.jsonl").string();
    manifest_.open(path, std::ios::trunc);
    if (!manifest_) throw Error("sink: cannot write '" + path + "'");
  }
}

void Sink::write_npy(const std::string& path, const void* data, std::size_t bytes, DType dtype,
                     const std::vector<std::int64_t>& shape) {
  std::string dims;
  for (std::size_t i = 0; i < shape.size(); ++i) dims += fmt::format("{}{}", i ? ", " : "", shape[i]);
  if (shape.size() == 1) dims += ",";
  const char* descr = dtype == DType::float32 ? "<f4" : dtype == DType::float16 ? "<f2" : "|u1";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, dims);
  // Magic (6) + version (2) + length (2) + header + '\n', padded to 64 bytes.
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("sink: cannot write '" + path + "'");
  const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                                static_cast<unsigned char>(header.size() >> 8)};
  out.write("\x93NUMPY\x01\x00", 8);
  out.write(reinterpret_cast<const char*>(len), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!out) throw Error("sink: write to '" + path + "' failed (disk full?)");
}

namespace {

// The slot's clips are T x C x H x W each (frame after frame, as the
// stages make them); cthw wants C x T x H x W: per clip and channel, its T
// planes gathered into one run (one strided copy each, on the batch's
// stream, after its kernels; then `ready` again). N x C copies per batch.
void regroup_clips(BatchSlot& b) {
  DeviceBatch& db = b.batch;
  DeviceBuffers& buf = b.buffers();
  const auto T = static_cast<std::size_t>(db.clip_length);
  const std::size_t clips = db.samples.size() / T;
  constexpr std::size_t C = 3;
  const std::size_t plane = b.out_sample_bytes / C;  // one channel of one frame
  if (buf.d_clips.size() < db.bytes) {
    std::optional<gpu::CurrentDeviceGuard> keep;  // the buffer is made on the batch's device
    if (db.device >= 0) keep.emplace();
    buf.d_clips = gpu::DeviceBuffer();
    buf.d_clips = gpu::DeviceBuffer(db.device, std::max(db.bytes, static_cast<std::size_t>(b.room) * b.out_sample_bytes));
  }
  const auto* src = static_cast<const std::uint8_t*>(db.data);
  auto* dst = static_cast<std::uint8_t*>(buf.d_clips.get());
  for (std::size_t n = 0; n < clips; ++n)
    for (std::size_t c = 0; c < C; ++c)
      gpu::copy_2d_async(dst + ((n * C + c) * T) * plane, plane, src + (n * T * C + c) * plane, C * plane, plane, T,
                         b.dev->stream);
  db.data = buf.d_clips.get();
  if (db.device >= 0) buf.ready.record(b.dev->stream);
}

// The batch's checksum from the parts PackCopy summed as it wrote each
// sample (BatchSlot::sums), each third placed where the batch has it: in
// order, or regrouped by channel per clip as regroup_clips moves it. None
// unless every sample was summed at its place.
std::optional<std::uint64_t> summed_checksum(const BatchSlot& b) {
  const DeviceBatch& db = b.batch;
  const std::size_t n = db.samples.size(), bytes = b.out_sample_bytes, third = bytes / 3;
  if (n == 0 || b.sums.size() < n || db.bytes != n * bytes) return std::nullopt;
  const bool regrouped = db.clip_length > 0 && db.clip_layout == ClipLayout::cthw;
  const std::size_t T = regrouped ? static_cast<std::size_t>(db.clip_length) : 1;
  std::uint64_t sum = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const SampleChecksum& s = b.sums[k];
    if (s.bytes != bytes || s.offset != k * bytes) return std::nullopt;
    for (std::size_t c = 0; c < 3; ++c)
      sum += s.part[c].at(regrouped ? (((k / T) * 3 + c) * T + k % T) * third : k * bytes + c * third);
  }
  return sum;
}

}  // namespace

void Sink::fill(BatchSlot& b) const {
  DeviceBatch& db = b.batch;
  // The tensor: the kernels' output (or, in zero-copy mode, the GPU's copy
  // of the tensor the CPU made in the mapped slot), else the staged copy.
  // Never the write-combined slot itself: DeviceBatch::data is read freely;
  // on the host backend the slot when it is plain memory (batch_in_slot).
  DeviceBuffers& buf = b.buffers();
  db.data = buf.d_output.get() ? buf.d_output.get() : buf.d_input.get();
  if (b.dev->device < 0 && !ring_.zero_copy() && !buf.d_output.get() && b.staged &&
      b.staged.for_device() != buf.d_input.get())  // the transfer left the batch in its slot
    db.data = const_cast<void*>(b.staged.for_device());
  if (db.data == nullptr) throw std::logic_error("sink: the batch's tensor is in no buffer of its slot");
  db.device = b.dev->device;
  db.stream = b.dev->stream.get();
  // With clips the slot holds whole clips (the source takes a clip's frames
  // together); a run stopped early may end inside one, which is left out.
  const int frames = db.clip_length > 0 ? b.count - b.count % db.clip_length : b.count;
  db.shape[0] = db.clip_length > 0 ? frames / db.clip_length : frames;
  db.bytes = static_cast<std::size_t>(frames) * b.out_sample_bytes;
  db.index = b.index;
  db.samples.assign(b.samples.begin(), b.samples.begin() + frames);
  if (db.clip_length > 0 && db.clip_layout == ClipLayout::cthw) regroup_clips(b);
  db.ready = buf.ready.get();
}



std::uint64_t Sink::checksum_on_device(BatchSlot& b) {
  const DeviceBatch& db = b.batch;
  const gpu::Stream& stream = b.dev->stream;
  if (stream.device() < 0) {
    if (const std::optional<std::uint64_t> sum = summed_checksum(b)) return *sum;
    return kernels::checksum_ref(db.data, db.bytes);
  }
  DeviceBuffers& buf = b.buffers();
  std::uint64_t sum = 0;
  kernels::checksum_gpu(db.data, db.bytes, static_cast<std::uint64_t*>(buf.d_checksum.get()), stream.get());
  gpu::copy_d2h_async(&sum, buf.d_checksum.get(), sizeof sum, stream);
  const auto t0 = std::chrono::steady_clock::now();
  stream.synchronize();  // waits for the batch's copy and kernels too
  own_stats().add_wait(std::chrono::steady_clock::now() - t0);
  return sum;
}


std::uint64_t Sink::dump(BatchSlot& b) {
  const DeviceBatch& db = b.batch;
  host_copy_.resize(db.bytes);
  gpu::copy_d2h_async(host_copy_.data(), db.data, db.bytes, b.dev->stream);
  const auto t0 = std::chrono::steady_clock::now();
  b.dev->stream.synchronize();
  own_stats().add_wait(std::chrono::steady_clock::now() - t0);
  write_npy((std::filesystem::path(folder_) / fmt::format("batch_{:06d}.npy", b.index)).string(),
            host_copy_.data(), db.bytes, db.dtype, db.shape);
  for (std::size_t i = 0; i < db.samples.size(); ++i) {
    const SampleId& s = db.samples[i];
    nlohmann::json line{{"batch", b.index}, {"index", i}, {"input_index", s.input_index},
                        {"path", s.path}, {"frame", s.frame},
                        {"route", s.decoded_on_gpu ? "gpu" : "cpu"}, {"label", s.label},
                        {"geometry", geometry_json(s.geometry)}};
    if (db.clip_length > 0) {  // a clip's frame: index is the clip's place in the batch, clip_frame the frame's in it
      line["index"] = i / static_cast<std::size_t>(db.clip_length);
      line["clip"] = s.clip;
      line["clip_frame"] = i % static_cast<std::size_t>(db.clip_length);
    }
    if (!std::isnan(s.pts)) line["pts"] = s.pts;
    manifest_ << line.dump() << '\n';
  }
  manifest_.flush();
  if (!manifest_) throw Error("sink: write to '" + folder_ + "/manifest.jsonl' failed (disk full?)");
  return kernels::checksum_ref(host_copy_.data(), db.bytes);
}

Tally Sink::run(Work& w) {
  Tally sum{0, 0};
  for (BatchSlot* b = w.batch; b != nullptr;) {
    BatchSlot* then = b->then;  // read first: once released, the slot may be packed again at once
    const Tally t = deliver(*b);
    sum.items += t.items;
    sum.bytes += t.bytes;
    b = then;
  }
  return sum;
}

Tally Sink::deliver(BatchSlot& b) {
  // The slot goes back to the ring after the work enqueued on the batch's
  // stream (the callback's included); also when the checksum, the dump or the
  // callback throws, and then without masking that exception.
  auto release = [&] {
    --b.dev->in_flight;
    ring_.release(b.slot, b.dev->stream);
  };
  if (b.count == 0) {  // every sample failed after packing (GPU ops reported them)
    release();
    return {0, 0};
  }
  std::uint64_t frames = 0, samples = 0;  // what the batch delivers: frames among its samples (clips: theirs)
  try {
    fill(b);
    frames = static_cast<std::uint64_t>(std::count_if(b.batch.samples.begin(), b.batch.samples.end(),
                                                      [](const SampleId& s) { return s.kind == SampleKind::frame; }));
    samples = b.batch.size();
    const BatchRecord rec{b.index, static_cast<std::uint64_t>(b.count),
                          cfg_.type == SinkType::discard ? checksum_on_device(b) : dump(b)};
    // Both waited for the batch's GPU work: it is ready now.
    const auto ready = std::chrono::steady_clock::now();
    for (int i = 0; i < b.count; ++i)
      latency_.add(std::chrono::duration<double, std::milli>(ready - b.t0[i]).count());
    if (callback_) callback_(b.batch);
    records_.push_back(rec);
    if (handoff_) {
      const std::size_t bytes = b.batch.bytes;  // read before: once handed over, the slot may be reused at once
      handoff_(b);  // the slot is the hand-off's now
      delivered_ += samples;
      delivered_frames_ += frames;
      return {1, bytes};
    }
  } catch (...) {
    try {
      release();
    } catch (...) {
      // A sticky CUDA error: the exception in flight already reports it.
    }
    throw;
  }
  // Read before the release: the packer may take the slot again at once.
  const std::size_t bytes = b.batch.bytes;
  release();
  delivered_ += samples;
  delivered_frames_ += frames;
  return {1, bytes};
}

}  // namespace imgpipe::stages
