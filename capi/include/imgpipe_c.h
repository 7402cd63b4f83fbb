/* imgpipe's C API: the pipeline's pull API (imgpipe/pipeline.hpp:
 * Pipeline::start -> BatchStream::next -> Batch) behind opaque handles, for
 * bindings and other languages. The Python package (python/imgpipe) loads
 * the shared library libimgpipe_c.so with ctypes; Rust, Go or C# can call it
 * the same way. No CUDA header is needed: streams and events are void*
 * (cudaStream_t, cudaEvent_t), and the calls that touch CUDA for a consumer
 * (stream waits, release ordering) are made here.
 *
 *   imgpipe_pipeline* p;  imgpipe_stream* s;  imgpipe_batch* b;
 *   if (imgpipe_pipeline_create("pipeline.yaml", IMGPIPE_CONFIG_FILE, NULL, NULL, 0, &p) != IMGPIPE_OK)
 *     fprintf(stderr, "%s: %s\n", imgpipe_last_error_class(), imgpipe_last_error());
 *   imgpipe_pipeline_start(p, NULL, &s);
 *   while (imgpipe_stream_next(s, -1, &b) == IMGPIPE_OK) {
 *     imgpipe_batch_info info;  imgpipe_batch_get_info(b, &info);
 *     ... use info.data on info.stream ...
 *     imgpipe_batch_free(b, NULL);
 *   }
 *   const char* json;  imgpipe_stream_report_json(s, &json);
 *   imgpipe_stream_destroy(s);  imgpipe_pipeline_destroy(p);
 *
 * Errors: every call that can fail returns an imgpipe_status; on an error
 * the calling thread's last error holds the C++ exception's message
 * (imgpipe_last_error), its class (imgpipe_last_error_class) and its fields
 * (imgpipe_last_error_field). Nothing throws across this API. Strings the
 * library returns are UTF-8 and owned by the library (valid as documented
 * per call); strings passed in are UTF-8, copied when kept.
 *
 * Threads: a pipeline, a stream and a batch may each be used from any
 * thread, one call at a time per handle (imgpipe_stream_stop,
 * imgpipe_pipeline_request_stop and imgpipe_batch_free may race with
 * anything). Batches may outlive their stream and pipeline.
 */
#ifndef IMGPIPE_C_H_
#define IMGPIPE_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Raised when a signature or a struct below changes. */
#define IMGPIPE_C_API_VERSION 2

typedef enum imgpipe_status {
  IMGPIPE_OK = 0,
  IMGPIPE_END = 1,      /* imgpipe_stream_next: the run is over, no batch */
  IMGPIPE_TIMEOUT = 2,  /* imgpipe_stream_next: no batch within the time-out; ask again */
  /* Errors (< 0); imgpipe_last_error_class() names the C++ class. */
  IMGPIPE_E_ERROR = -1,        /* "Error": imgpipe::Error of no kind below (I/O, no inputs for a shard ...) */
  IMGPIPE_E_CONFIG = -2,       /* "ConfigError": fields key, line, reason */
  IMGPIPE_E_INPUT = -3,        /* "InputError" (a bad input under on_error: fail): fields path, frame, reason */
  IMGPIPE_E_CUDA = -4,         /* "CudaError": fields name, code */
  IMGPIPE_E_INTERRUPTED = -5,  /* "Interrupted" */
  IMGPIPE_E_USAGE = -6,        /* "UsageError": a null handle, a bad argument, a call out of order
                                  (std::logic_error, e.g. every staging slot held by the caller) */
  IMGPIPE_E_INTERNAL = -7      /* "InternalError": any other exception (std::bad_alloc ...) */
} imgpipe_status;

typedef struct imgpipe_pipeline imgpipe_pipeline;
typedef struct imgpipe_stream imgpipe_stream;
typedef struct imgpipe_batch imgpipe_batch;

/* Library version ("0.1.0"), IMGPIPE_C_API_VERSION of the library, and 1
 * when it has the CUDA backend (0: host backend only). */
const char* imgpipe_version(void);
int imgpipe_c_api_version(void);
int imgpipe_built_with_cuda(void);

/* The calling thread's last error: its message ("" when none), its class
 * ("ConfigError", "InputError", "CudaError", "Interrupted", "Error",
 * "UsageError", "InternalError"; "" when none) and one of its fields by name
 * (see imgpipe_status; "" when it has no such field). Valid until the
 * thread's next failing call. A successful call leaves them as they were. */
const char* imgpipe_last_error(void);
const char* imgpipe_last_error_class(void);
const char* imgpipe_last_error_field(const char* name);

/* Level of imgpipe's logger (stderr): "error", "warn", "info", "debug" or "off". */
imgpipe_status imgpipe_set_log_level(const char* level);
/* Routes imgpipe's log messages to `callback` instead of stderr: each
 * message that passes the level, as (level: 0 trace, 1 debug, 2 info,
 * 3 warn, 4 error, 5 critical; the message, UTF-8, without time or name,
 * valid during the call; user). It is called on the thread that logs (any of
 * a run's), one call at a time. NULL restores stderr; returns once no call of
 * the previous callback is under way. IMGPIPE_E_USAGE when the application
 * registered its own spdlog logger named "imgpipe" (that one is left alone).
 * Python's package routes them to the `logging` logger "imgpipe". */
typedef void (*imgpipe_log_callback)(int level, const char* message, void* user);
imgpipe_status imgpipe_set_log_callback(imgpipe_log_callback callback, void* user);

/* ---- pipeline ---------------------------------------------------------- */

typedef enum imgpipe_config_kind {
  IMGPIPE_CONFIG_FILE = 0, /* `config` is the path of a YAML file */
  IMGPIPE_CONFIG_YAML = 1, /* `config` is YAML (or JSON) text */
  IMGPIPE_CONFIG_MAPPING = 2 /* `config` is JSON (or YAML) text a binding made from a mapping of its
                                language (a Python dict): its errors name no line, they say
                                "[in the dict config]" */
} imgpipe_config_kind;

/* Makes a Pipeline (Config::from_yaml_file / from_yaml_string, validated).
 * config: NULL for the defaults. overrides: NULL, or a YAML/JSON mapping of
 * sections merged key by key over the config before it is read, e.g.
 * {"batch": {"size": 8}} (a ConfigError in it says "[in overrides]").
 * inputs: n_inputs paths that replace input.paths (as the CLI's --input;
 * n_inputs 0 keeps the config's). Relative paths resolve against the
 * current directory. *out: the pipeline, or NULL on error. */
imgpipe_status imgpipe_pipeline_create(const char* config, imgpipe_config_kind kind, const char* overrides,
                                       const char* const* inputs, size_t n_inputs, imgpipe_pipeline** out);
/* Drops the caller's handle: a running stream of it is asked to stop, and
 * the pipeline is freed with its last stream (imgpipe_stream_destroy). NULL
 * is a no-op. */
void imgpipe_pipeline_destroy(imgpipe_pipeline* p);
/* The effective config as YAML (every key); owned by p, valid until the next call on p. */
imgpipe_status imgpipe_pipeline_config_yaml(imgpipe_pipeline* p, const char** out);
/* Pipeline::request_stop(): thread- and async-signal-safe. */
void imgpipe_pipeline_request_stop(imgpipe_pipeline* p);
/* Pipeline::set_epoch() / epoch(): the epoch the next run gets (a run takes
 * it and the next follows: 0, 1, 2, ...); input.shuffle draws each epoch's
 * order from (seed, epoch), the same on every rank. NULL is a no-op / 0. */
void imgpipe_pipeline_set_epoch(imgpipe_pipeline* p, uint64_t epoch);
uint64_t imgpipe_pipeline_epoch(const imgpipe_pipeline* p);

/* The checks a run begins with, without starting one (Pipeline::check): the
 * inputs named exist (ConfigError, key "input.paths" or "input.list") and
 * the devices exist (ConfigError, key "devices"). device: as for
 * imgpipe_pipeline_start (NULL: the config's). */
imgpipe_status imgpipe_pipeline_check(imgpipe_pipeline* p, const char* device);
/* The number of batches the next run delivers when every input decodes
 * (Pipeline::planned_batches): *known 1 and *batches set; or *known 0 when
 * it cannot be known before decoding (videos, streams) and *why the reason
 * (owned by p, valid until the next call on p). Runs the whole discovery. */
imgpipe_status imgpipe_pipeline_planned_batches(imgpipe_pipeline* p, uint64_t* batches, int* known, const char** why);

/* Starts a run whose batches the caller pulls (Pipeline::start). device:
 * NULL for the config's `devices`, else "auto", "cpu", "all", "N" or
 * "[N, M]". The input checks throw here (ConfigError). One stream at a time
 * per pipeline: destroy the previous one first (UsageError otherwise).
 * *out: the stream, or NULL on error. */
imgpipe_status imgpipe_pipeline_start(imgpipe_pipeline* p, const char* device, imgpipe_stream** out);

/* ---- stream ------------------------------------------------------------ */

/* The next batch in input order. timeout_ms < 0 waits as long as it takes;
 * >= 0 returns IMGPIPE_TIMEOUT when no batch came within it (the run goes
 * on; BatchStream::next_for), so that a binding can check for signals
 * between calls. IMGPIPE_END at the end of the
 * run (or after a stop); an error status for what ended the run, once the
 * batches before it were taken. *out: a batch (one reference) on
 * IMGPIPE_OK, else NULL. Any number of batches may be held: when they keep
 * every staging slot, the oldest moves out of the ring (Batch, in
 * imgpipe/pipeline.hpp; docs/architecture.md, "Holding batches"), at the
 * same address. */
imgpipe_status imgpipe_stream_next(imgpipe_stream* s, int64_t timeout_ms, imgpipe_batch** out);
/* Asks the run to end soon (frames in flight finish; next() returns them, then END). Any thread. */
void imgpipe_stream_stop(imgpipe_stream* s);
/* 1 when the run has ended (next() has nothing more, or will fail). */
int imgpipe_stream_done(imgpipe_stream* s);
/* The run's report as JSON (Report::to_json). Only at the end (after END,
 * or after a stop: then it waits for the run's end); IMGPIPE_E_USAGE
 * before. A run that ended with an error has no report: its error again.
 * Owned by s, valid until it is destroyed. */
imgpipe_status imgpipe_stream_report_json(imgpipe_stream* s, const char** out);
/* Stops the run, waits for its threads, releases the batches not taken, and
 * frees the handle. Batches taken stay valid. NULL is a no-op. */
void imgpipe_stream_destroy(imgpipe_stream* s);

/* ---- batch ------------------------------------------------------------- */

typedef enum imgpipe_dtype { IMGPIPE_FLOAT32 = 0, IMGPIPE_FLOAT16 = 1, IMGPIPE_UINT8 = 2 } imgpipe_dtype;
typedef enum imgpipe_layout { IMGPIPE_NCHW = 0, IMGPIPE_NHWC = 1 } imgpipe_layout;
/* input.video.clips.layout: one clip's tensor (imgpipe_batch_info.clip_layout). */
typedef enum imgpipe_clip_layout { IMGPIPE_CTHW = 0, IMGPIPE_TCHW = 1, IMGPIPE_THWC = 2 } imgpipe_clip_layout;

/* One batch (DeviceBatch). The data stays valid, unchanged and at the same
 * address while any reference to the batch lives (a later
 * imgpipe_stream_next may move it out of the staging ring: its `ready`
 * event changes then). On a GPU the data is device memory, never the host
 * staging slot. */
typedef struct imgpipe_batch_info {
  void* data;          /* device pointer (host pointer when device == -1) */
  uint64_t bytes;
  int32_t device;      /* CUDA ordinal; -1: host backend */
  int32_t ndim;        /* 4; 5 with clips */
  /* {N, C, H, W} or {N, H, W, C}, in `layout`; with clips (clip_length T >
   * 0) {N, C, T, H, W} (cthw), {N, T, C, H, W} (tchw) or {N, T, H, W, C}
   * (thwc), as clip_layout says. */
  int64_t shape[5];
  int32_t dtype;       /* imgpipe_dtype */
  int32_t layout;      /* imgpipe_layout */
  uint8_t dl_code;     /* DLPack DLDataTypeCode: 2 float, 1 unsigned int */
  uint8_t dl_bits;     /* 32, 16 or 8 */
  uint16_t reserved;
  void* stream;        /* cudaStream_t the batch was produced on (NULL on the host backend) */
  void* ready;         /* cudaEvent_t recorded after its last kernel (NULL on the host backend) */
  uint64_t index;      /* batch number in the run, from 0 */
  uint64_t size;       /* samples (shape[0]): images and frames, or clips */
  int32_t clip_length; /* frames per clip (input.video.clips.length); 0 without clips */
  int32_t clip_layout; /* imgpipe_clip_layout (with clips) */
} imgpipe_batch_info;

imgpipe_status imgpipe_batch_get_info(imgpipe_batch* b, imgpipe_batch_info* out);
/* The samples as a JSON array, in tensor order, one object each:
 * {"input_index": N, "path": "...", "frame": -1, "route": "cpu"|"gpu",
 *  "clip": C (-1 without clips; a clip's frames are clip_length consecutive
 *  entries), "pts": seconds (video files' frames; null when unknown),
 *  "label": L (-1: none; an index into the report's "classes"),
 *  "geometry": {"width", "height", "stored_width", "stored_height",
 *    "orientation", "decode_scale", "resize", "scale_x", "scale_y",
 *    "offset_x", "offset_y", "resized_width", "resized_height", "pad_left",
 *    "pad_top", "crop_x", "crop_y", "tensor_width", "tensor_height"}}
 * (SampleId and SampleGeometry, imgpipe/geometry.hpp, field for field; the
 * dump sink's manifest uses the same names). Owned by b, valid while b lives. */
imgpipe_status imgpipe_batch_samples_json(imgpipe_batch* b, const char** out);
/* The samples' labels (-1: none) into out[0 .. min(n, size)); with clips, one per clip
 * (its video's). */
imgpipe_status imgpipe_batch_labels(imgpipe_batch* b, int64_t* out, size_t n);

/* Maps a box {x, y, width, height} of sample `sample`'s tensor to its
 * original image (to_image 1: tensor_to_image, clipped) or back (0:
 * image_to_tensor), in the original's displayed coordinates (stored 0, as
 * cv::imread shows it) or as the file stores it (stored 1; they differ for
 * an EXIF-oriented JPEG). A point is a box of width and height 0. */
imgpipe_status imgpipe_batch_map(imgpipe_batch* b, size_t sample, int to_image, int stored, const double in[4],
                                 double out[4]);

/* Makes `consumer` (a cudaStream_t; (void*)1 the legacy default stream,
 * (void*)2 the per-thread one, of the batch's device) wait for the batch's
 * ready event (cudaStreamWaitEvent; the host backend: nothing to do). */
imgpipe_status imgpipe_batch_wait(imgpipe_batch* b, void* consumer);
/* Blocks the calling thread until the batch is ready (cudaEventSynchronize). */
imgpipe_status imgpipe_batch_synchronize(imgpipe_batch* b);

/* One more reference to b (for each tensor that views it); returns b. */
imgpipe_batch* imgpipe_batch_retain(imgpipe_batch* b);
/* Drops one reference. `after`: NULL, or a stream of the caller's whose
 * work so far must end before the batch's memory is reused. The last
 * reference releases the batch (Batch::release): its slot is reused only
 * after every stream given to this call for it (they are joined onto one of
 * them with an event). Never fails (a CUDA error is logged). NULL is a no-op. */
void imgpipe_batch_free(imgpipe_batch* b, void* after);

/* ---- DLPack ------------------------------------------------------------ */

/* A DLPack tensor viewing the batch, holding one reference to it:
 * a DLManagedTensor (DLPack 0.x, capsule "dltensor") when versioned == 0, a
 * DLManagedTensorVersioned (DLPack 1.0, capsule "dltensor_versioned") when 1.
 * consumer: the stream the consumer will use (as above; NULL for the legacy
 * default stream), or (void*)-1 for none: unless -1 it is made to wait for
 * the batch's ready event, and the batch's release is ordered after it when
 * the tensor's deleter runs. Shape and strides (in elements, C order) are
 * the batch's; device kDLCUDA:N, or kDLCPU:0 on the host backend. The
 * tensor's deleter (any thread, no lock needed) frees it and drops the
 * reference. */
imgpipe_status imgpipe_batch_to_dlpack(imgpipe_batch* b, void* consumer, int versioned, void** out);
/* Calls a DLPack tensor's own deleter (for a capsule never consumed). */
void imgpipe_dlpack_delete(void* tensor, int versioned);
/* offsetof / sizeof in this library's DLPack structs, for bindings to check
 * their mirrors: "DLTensor.shape", "DLManagedTensor.deleter",
 * "sizeof(DLTensor)", ... (-1 for a name it does not know). */
int64_t imgpipe_dlpack_layout(const char* name);

#ifdef __cplusplus
}
#endif

#endif /* IMGPIPE_C_H_ */
