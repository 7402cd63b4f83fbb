/* A C program on the C API alone (C99): runs a pipeline over the inputs
 * given, on the host backend, and prints what it got; checks the error path.
 *   c_consumer INPUT...   (exit 0 when every check held) */
#include <stdio.h>
#include <string.h>

#include "imgpipe_c.h"

#define CHECK(cond)                                              \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "c_consumer: check failed: %s\n", #cond);  \
      return 1;                                                  \
    }                                                            \
  } while (0)

/* imgpipe_log_callback: counts the warnings that name the broken file. */
static void count_log(int level, const char* message, void* user) {
  if (level == 3 && strstr(message, "c_consumer_broken.jpg") != NULL) ++*(int*)user;
}

/* A run over one file that is not a JPEG, with the log routed to count_log:
   returns how many warnings named it (0 on any failure). */
static int warnings_of_a_broken_file(void) {
  const char* path = "c_consumer_broken.jpg";
  const char* inputs[1];
  imgpipe_pipeline* p = NULL;
  imgpipe_stream* s = NULL;
  imgpipe_batch* b = NULL;
  int n = 0;
  FILE* f = fopen(path, "wb");
  if (f == NULL) return 0;
  fputs("not a JPEG at all", f);
  fclose(f);
  inputs[0] = path;
  if (imgpipe_set_log_callback(count_log, &n) != IMGPIPE_OK || imgpipe_set_log_level("warn") != IMGPIPE_OK) return 0;
  if (imgpipe_pipeline_create(NULL, IMGPIPE_CONFIG_YAML, NULL, inputs, 1, &p) == IMGPIPE_OK &&
      imgpipe_pipeline_start(p, "cpu", &s) == IMGPIPE_OK) {
    while (imgpipe_stream_next(s, -1, &b) == IMGPIPE_OK) imgpipe_batch_free(b, NULL);
    imgpipe_stream_destroy(s);
  }
  imgpipe_pipeline_destroy(p);
  imgpipe_set_log_level("error");
  imgpipe_set_log_callback(NULL, NULL);
  remove(path);
  return n;
}

int main(int argc, char** argv) {
  imgpipe_pipeline* p = NULL;
  imgpipe_pipeline* q = NULL;
  imgpipe_stream* s = NULL;
  imgpipe_batch* b = NULL;
  imgpipe_batch_info info;
  const char* json = NULL;
  unsigned long long samples = 0, batches = 0;
  uint64_t planned = 0;
  int known = 0, logged = 0;
  const char* why = NULL;
  CHECK(argc > 1);
  CHECK(imgpipe_c_api_version() == IMGPIPE_C_API_VERSION);
  CHECK(imgpipe_set_log_level("error") == IMGPIPE_OK);

  /* An error: the status, the class, the message and a field. */
  CHECK(imgpipe_pipeline_create("batch: {sise: 4}", IMGPIPE_CONFIG_YAML, NULL, NULL, 0, &p) == IMGPIPE_E_CONFIG);
  CHECK(p == NULL);
  CHECK(strcmp(imgpipe_last_error_class(), "ConfigError") == 0);
  CHECK(strstr(imgpipe_last_error(), "batch.sise") != NULL);
  CHECK(strcmp(imgpipe_last_error_field("key"), "batch.sise") == 0);

  CHECK(imgpipe_pipeline_create(NULL, IMGPIPE_CONFIG_YAML,
                                "{batch: {size: 8}, transform: {resize: {width: 32, height: 16}}}",
                                (const char* const*)(argv + 1), (size_t)(argc - 1), &p) == IMGPIPE_OK);
  /* The checks a run begins with, without one: a device that is not there. */
  CHECK(imgpipe_pipeline_check(p, "7") == IMGPIPE_E_CONFIG);
  CHECK(strcmp(imgpipe_last_error_field("key"), "devices") == 0);
  CHECK(imgpipe_pipeline_check(p, "cpu") == IMGPIPE_OK);
  CHECK(imgpipe_pipeline_planned_batches(p, &planned, &known, &why) == IMGPIPE_OK);
  CHECK(known == 1 && why != NULL);
  /* A mapping's errors name no line. The log through a callback: one warning for the broken file. */
  CHECK(imgpipe_pipeline_create("{\"batch\": {\"sise\": 4}}", IMGPIPE_CONFIG_MAPPING, NULL, NULL, 0, &q) ==
        IMGPIPE_E_CONFIG);
  CHECK(strstr(imgpipe_last_error(), "[in the dict config]") != NULL);
  CHECK(strcmp(imgpipe_last_error_field("line"), "0") == 0);
  logged = warnings_of_a_broken_file();
  CHECK(logged == 1);
  CHECK(imgpipe_pipeline_start(p, "cpu", &s) == IMGPIPE_OK);
  for (;;) {
    imgpipe_status st = imgpipe_stream_next(s, 100, &b);
    if (st == IMGPIPE_TIMEOUT) continue;
    if (st == IMGPIPE_END) break;
    if (st != IMGPIPE_OK) {
      fprintf(stderr, "c_consumer: %s: %s\n", imgpipe_last_error_class(), imgpipe_last_error());
      return 1;
    }
    CHECK(imgpipe_batch_get_info(b, &info) == IMGPIPE_OK);
    CHECK(info.device == -1 && info.ndim == 4 && info.shape[1] == 3 && info.shape[2] == 16 && info.shape[3] == 32);
    CHECK(info.dtype == IMGPIPE_FLOAT32 && info.layout == IMGPIPE_NCHW && info.data != NULL);
    CHECK(imgpipe_batch_samples_json(b, &json) == IMGPIPE_OK && json[0] == '[');
    samples += info.size;
    ++batches;
    imgpipe_batch_free(b, NULL);
  }
  CHECK(imgpipe_stream_report_json(s, &json) == IMGPIPE_OK && strstr(json, "\"delivered\"") != NULL);
  imgpipe_stream_destroy(s);
  imgpipe_pipeline_destroy(p);
  CHECK(batches == planned);
  printf("c_consumer: %llu samples in %llu batches (imgpipe %s)\n", samples, batches, imgpipe_version());
  return samples > 0 ? 0 : 1;
}
