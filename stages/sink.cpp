#include "sink.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
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

void Sink::fill(BatchSlot& b) const {
  DeviceBatch& db = b.batch;
  // The tensor: the kernels' output (or, in zero-copy mode, the GPU's copy
  // of the tensor the CPU made in the mapped slot), else the staged copy.
  // Never the write-combined slot itself: DeviceBatch::data is read freely.
  DeviceBuffers& buf = b.buffers();
  db.data = buf.d_output.get() ? buf.d_output.get() : buf.d_input.get();
  if (db.data == nullptr) throw std::logic_error("sink: the batch's tensor is in no buffer of its slot");
  db.device = b.dev->device;
  db.stream = b.dev->stream.get();
  db.shape[0] = b.count;
  db.bytes = static_cast<std::size_t>(b.count) * b.out_sample_bytes;
  db.index = b.index;
  db.samples.assign(b.samples.begin(), b.samples.begin() + b.count);
  db.ready = buf.ready.get();
}

std::uint64_t Sink::checksum_on_device(BatchSlot& b) {
  const DeviceBatch& db = b.batch;
  const gpu::Stream& stream = b.dev->stream;
  if (stream.device() < 0) return kernels::checksum_ref(db.data, db.bytes);
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
  for (int i = 0; i < b.count; ++i) {
    const SampleId& s = db.samples[i];
    manifest_ << nlohmann::json{{"batch", b.index}, {"index", i}, {"input_index", s.input_index},
                                {"path", s.path}, {"frame", s.frame},
                                {"route", s.decoded_on_gpu ? "gpu" : "cpu"}, {"label", s.label},
                                {"geometry", geometry_json(s.geometry)}}
                     .dump()
              << '\n';
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
  const auto frames = static_cast<std::uint64_t>(std::count_if(
      b.samples.begin(), b.samples.begin() + b.count, [](const SampleId& s) { return s.kind == SampleKind::frame; }));
  try {
    fill(b);
    const BatchRecord rec{b.index, static_cast<std::uint64_t>(b.count),
                          cfg_.type == SinkType::discard ? checksum_on_device(b) : dump(b)};
    // Both waited for the batch's GPU work: it is ready now.
    const auto ready = std::chrono::steady_clock::now();
    for (int i = 0; i < b.count; ++i)
      latency_.add(std::chrono::duration<double, std::milli>(ready - b.t0[i]).count());
    if (callback_) callback_(b.batch);
    records_.push_back(rec);
    if (handoff_) {
      const int count = b.count;  // read before: once handed over, the slot may be reused at once
      const std::size_t bytes = b.batch.bytes;
      handoff_(b);  // the slot is the hand-off's now
      delivered_ += count;
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
  const int count = b.count;
  const std::size_t bytes = b.batch.bytes;
  release();
  delivered_ += count;
  delivered_frames_ += frames;
  return {1, bytes};
}

}  // namespace imgpipe::stages
