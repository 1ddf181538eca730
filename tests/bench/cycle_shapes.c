/*
 * cycle_shapes.c -- memory and first-run check of one Loom session fed many input shapes.
 *
 * Loads a model, creates ONE session (devices from --devices, --threads threads, every other
 * session option at its default), and runs it --runs times, cycling through the input-shape
 * sets given on the command line. Each set is one positional argument, NAME=DIMS pairs joined
 * by commas (DIMS like 1x3x224x224; empty for a scalar):
 *
 *   cycle_shapes model.onnx --devices onednn,cpu --runs 500 \
 *       input=1x3x224x224 input=2x3x192x256 input=1x3x320x320
 *   cycle_shapes bert.onnx --int-range 0:1000 --int-range attention_mask=1:2 \
 *       input_ids=1x32,attention_mask=1x32 input_ids=4x64,attention_mask=4x64
 *
 * An input a set does not name must have a fully static declared shape. Inputs are random and
 * regenerated for every run from --seed, the set and the input: floats uniform in
 * --float-range (default -1:1), integers uniform in [LO, HI) of --int-range (default 0:1000;
 * NAME=LO:HI for one input, which wins over an unnamed range), bools 0/1. Generation is not
 * timed.
 *
 * Prints one JSON object on stdout: per set its first-run latency (the first run of the session
 * at that set's shapes) and the median of its later runs; VmHWM (peak RSS) and VmRSS from
 * /proc/self/status before the first run, after the first --early runs (default 20) and after
 * all runs; and the session's plan-cache counters (loom_session_plan_cache_stats). --plan-cache
 * sets the session's plan_cache_entries.
 * Errors: one line on stderr, exit code 1 (usage 2).
 *
 * Built by tests/bench/dynamic_shapes.py:
 *   cc -std=c99 -O2 -I core/include -I sdk/include cycle_shapes.c \
 *      -L build/default/lib -Wl,-rpath,build/default/lib -lloom -o cycle_shapes
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE

#include <errno.h>
#include <inttypes.h>
#include <loom/loom.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_INPUTS 64
#define MAX_SETS 1024
#define MAX_PLUGINS 16
#define MAX_RANGES 64

static void die(int code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("cycle_shapes: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(code);
}

static void check(loom_status_t* status, const char* what) {
  if (status == NULL) return;
  const char* message = loom_status_message(status);
  fprintf(stderr, "cycle_shapes: error: %s: %s\n", what, message ? message : "unknown error");
  loom_status_free(status);
  exit(1);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- random numbers: splitmix64, one stream per (seed, set, input, run) ------------------- */

static uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double uniform01(uint64_t* state) { return (double)(splitmix64(state) >> 11) * 0x1.0p-53; }

/* ---- /proc/self/status -------------------------------------------------------------------- */

typedef struct memory_t {
  long hwm_kib, rss_kib;
} memory_t;

static memory_t read_memory(void) {
  memory_t m = {-1, -1};
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return m;
  char line[256];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "VmHWM:", 6) == 0) m.hwm_kib = strtol(line + 6, NULL, 10);
    if (strncmp(line, "VmRSS:", 6) == 0) m.rss_kib = strtol(line + 6, NULL, 10);
  }
  fclose(f);
  return m;
}

/* ---- command line ------------------------------------------------------------------------- */

typedef struct range_t {
  const char* name; /* NULL: the default for every integer input */
  double lo, hi;
} range_t;

typedef struct set_t {
  const char* text; /* as given, for the report */
  int32_t rank[MAX_INPUTS];
  int64_t dims[MAX_INPUTS][LOOM_MAX_RANK];
  bool given[MAX_INPUTS];
  /* timings */
  double first_ms;
  double* later_ms;
  size_t num_later;
} set_t;

typedef struct input_t {
  char* name;
  loom_dtype_t dtype;
  int32_t rank;
  int64_t dims[LOOM_MAX_RANK];
  double lo, hi; /* value range */
  void* buffer;
  size_t capacity;
} input_t;

static void parse_range(const char* text, double* lo, double* hi, const char* flag) {
  char* end = NULL;
  errno = 0;
  *lo = strtod(text, &end);
  if (errno || end == text || *end != ':') die(2, "%s %s: expected LO:HI", flag, text);
  const char* second = end + 1;
  *hi = strtod(second, &end);
  if (errno || end == second || *end != '\0' || !(*hi > *lo))
    die(2, "%s %s: expected LO:HI with HI > LO", flag, text);
}

static int32_t parse_dims(const char* text, size_t len, int64_t* dims, const char* where) {
  int32_t rank = 0;
  size_t i = 0;
  if (len == 0) return 0; /* scalar */
  while (i <= len) {
    if (rank >= LOOM_MAX_RANK) die(2, "%s: too many dimensions", where);
    char* end = NULL;
    errno = 0;
    long long d = strtoll(text + i, &end, 10);
    size_t used = (size_t)(end - (text + i));
    if (errno || used == 0 || d < 0) die(2, "%s: bad dimensions", where);
    dims[rank++] = d;
    i += used;
    if (i == len) break;
    if (text[i] != 'x') die(2, "%s: bad dimensions", where);
    i++;
  }
  return rank;
}

static size_t element_count(int32_t rank, const int64_t* dims) {
  size_t n = 1;
  for (int32_t d = 0; d < rank; ++d) n *= (size_t)dims[d];
  return n;
}

static int compare_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, size_t n) {
  if (n == 0) return -1;
  qsort(v, n, sizeof *v, compare_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void json_string(const char* s) {
  putchar('"');
  for (; *s; ++s) {
    if (*s == '"' || *s == '\\')
      printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      printf("\\u%04x", (unsigned)(unsigned char)*s);
    else
      putchar(*s);
  }
  putchar('"');
}

static void usage(void) {
  fputs(
      "usage: cycle_shapes MODEL [--devices LIST] [--threads N] [--runs N] [--early N]\n"
      "                    [--plan-cache N]\n"
      "                    [--seed N] [--plugin PATH]... [--no-default-plugins]\n"
      "                    [--int-range [NAME=]LO:HI]... [--float-range LO:HI]\n"
      "                    NAME=DIMS[,NAME=DIMS...]...\n",
      stderr);
  exit(2);
}

int main(int argc, char** argv) {
  const char* model_path = NULL;
  const char* devices = "onednn,cpu";
  int threads = 2;
  long runs = 500, early = 20;
  uint64_t seed = 0;
  const char* plugins[MAX_PLUGINS];
  size_t num_plugins = 0;
  bool default_plugins = true;
  range_t ranges[MAX_RANGES];
  size_t num_ranges = 0;
  double float_lo = -1, float_hi = 1;
  long plan_cache = 0; /* plans the session keeps (0: the library's default) */
  const char* set_texts[MAX_SETS];
  size_t num_sets = 0;

  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    bool has_value = i + 1 < argc;
#define VALUE() (has_value ? argv[++i] : (usage(), ""))
    if (strcmp(a, "--devices") == 0) {
      devices = VALUE();
    } else if (strcmp(a, "--threads") == 0) {
      threads = atoi(VALUE());
    } else if (strcmp(a, "--plan-cache") == 0) {
      plan_cache = atol(VALUE());
    } else if (strcmp(a, "--runs") == 0) {
      runs = atol(VALUE());
    } else if (strcmp(a, "--early") == 0) {
      early = atol(VALUE());
    } else if (strcmp(a, "--seed") == 0) {
      seed = strtoull(VALUE(), NULL, 10);
    } else if (strcmp(a, "--plugin") == 0) {
      if (num_plugins == MAX_PLUGINS) die(2, "too many --plugin");
      plugins[num_plugins++] = VALUE();
    } else if (strcmp(a, "--no-default-plugins") == 0) {
      default_plugins = false;
    } else if (strcmp(a, "--int-range") == 0) {
      const char* v = VALUE();
      if (num_ranges == MAX_RANGES) die(2, "too many --int-range");
      range_t* r = &ranges[num_ranges++];
      const char* eq = strchr(v, '=');
      r->name = NULL;
      if (eq) {
        r->name = strndup(v, (size_t)(eq - v));
        v = eq + 1;
      }
      parse_range(v, &r->lo, &r->hi, "--int-range");
    } else if (strcmp(a, "--float-range") == 0) {
      parse_range(VALUE(), &float_lo, &float_hi, "--float-range");
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage();
    } else if (a[0] == '-' && a[1] == '-') {
      die(2, "unknown option %s", a);
    } else if (model_path == NULL) {
      model_path = a;
    } else {
      if (num_sets == MAX_SETS) die(2, "too many shape sets");
      set_texts[num_sets++] = a;
    }
#undef VALUE
  }
  if (model_path == NULL) usage();
  if (runs < 1 || early < 0 || threads < 0) die(2, "--runs must be >= 1, --early and --threads >= 0");

  /* ---- runtime, model, session ---- */
  loom_runtime_options_t ro;
  memset(&ro, 0, sizeof ro);
  ro.struct_size = sizeof ro;
  ro.num_plugin_paths = num_plugins;
  ro.plugin_paths = plugins;
  ro.use_env_path = default_plugins;
  ro.use_default_paths = default_plugins;
  ro.log_level = LOOM_LOG_WARNING;
  loom_runtime_t* runtime = NULL;
  check(loom_runtime_create(&ro, &runtime), "cannot start the runtime");

  double start = now_ms();
  loom_model_t* model = NULL;
  check(loom_model_load(runtime, model_path, &model), "cannot load the model");
  double load_ms = now_ms() - start;

  size_t num_inputs = loom_model_num_inputs(model);
  size_t num_outputs = loom_model_num_outputs(model);
  if (num_inputs > MAX_INPUTS) die(1, "the model has more than %d inputs", MAX_INPUTS);
  input_t inputs[MAX_INPUTS];
  memset(inputs, 0, sizeof inputs);
  for (size_t k = 0; k < num_inputs; ++k) {
    loom_io_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    check(loom_model_input(model, k, &info), "cannot read the model's inputs");
    if (loom_model_input_kind(model, k) != LOOM_VALUE_KIND_TENSOR)
      die(1, "input %s is not a tensor", info.name);
    inputs[k].name = strdup(info.name);
    inputs[k].dtype = info.dtype;
    inputs[k].rank = info.rank;
    memcpy(inputs[k].dims, info.dims, sizeof info.dims);
    inputs[k].lo = float_lo;
    inputs[k].hi = float_hi;
    switch (info.dtype) {
      case LOOM_DTYPE_FLOAT32:
      case LOOM_DTYPE_FLOAT64:
        break;
      case LOOM_DTYPE_INT64:
      case LOOM_DTYPE_INT32:
      case LOOM_DTYPE_INT8:
      case LOOM_DTYPE_UINT8:
        inputs[k].lo = 0;
        inputs[k].hi = 1000;
        /* The last unnamed range, then the last one naming this input. */
        for (int named = 0; named < 2; ++named)
          for (size_t r = 0; r < num_ranges; ++r)
            if (named ? ranges[r].name != NULL && strcmp(ranges[r].name, info.name) == 0
                      : ranges[r].name == NULL) {
              inputs[k].lo = ranges[r].lo;
              inputs[k].hi = ranges[r].hi;
            }
        break;
      case LOOM_DTYPE_BOOL:
        inputs[k].lo = 0;
        inputs[k].hi = 2;
        break;
      default:
        die(1, "input %s: dtype %s is not generated", info.name, loom_dtype_name(info.dtype));
    }
  }
  for (size_t r = 0; r < num_ranges; ++r) {
    bool found = ranges[r].name == NULL;
    for (size_t k = 0; k < num_inputs && !found; ++k) found = !strcmp(ranges[r].name, inputs[k].name);
    if (!found) die(2, "--int-range %s=...: the model has no such input", ranges[r].name);
  }

  /* ---- shape sets ---- */
  if (num_sets == 0) die(2, "no shape sets given (NAME=DIMS[,NAME=DIMS...])");
  set_t* sets = calloc(num_sets, sizeof *sets);
  if (!sets) die(1, "out of memory");
  for (size_t s = 0; s < num_sets; ++s) {
    set_t* set = &sets[s];
    set->text = set_texts[s];
    set->later_ms = calloc((size_t)runs, sizeof(double));
    const char* p = set->text;
    while (*p) {
      const char* comma = strchr(p, ',');
      size_t len = comma ? (size_t)(comma - p) : strlen(p);
      const char* eq = memchr(p, '=', len);
      if (!eq) die(2, "shape set %s: expected NAME=DIMS", set->text);
      size_t k = 0;
      while (k < num_inputs && !(strlen(inputs[k].name) == (size_t)(eq - p) &&
                                 strncmp(inputs[k].name, p, (size_t)(eq - p)) == 0))
        ++k;
      if (k == num_inputs) die(2, "shape set %s: the model has no input %.*s", set->text,
                               (int)(eq - p), p);
      set->rank[k] = parse_dims(eq + 1, len - (size_t)(eq + 1 - p), set->dims[k], set->text);
      set->given[k] = true;
      p += len + (comma ? 1 : 0);
    }
    for (size_t k = 0; k < num_inputs; ++k) {
      if (set->given[k]) {
        if (inputs[k].rank >= 0 && set->rank[k] != inputs[k].rank)
          die(2, "shape set %s: input %s has rank %d, not %d", set->text, inputs[k].name,
              inputs[k].rank, set->rank[k]);
        continue;
      }
      if (inputs[k].rank < 0) die(2, "shape set %s: input %s needs a shape", set->text, inputs[k].name);
      for (int32_t d = 0; d < inputs[k].rank; ++d)
        if (inputs[k].dims[d] < 0)
          die(2, "shape set %s: input %s has dynamic dimensions; give its shape", set->text,
              inputs[k].name);
      set->rank[k] = inputs[k].rank;
      memcpy(set->dims[k], inputs[k].dims, sizeof inputs[k].dims);
    }
  }
  for (size_t k = 0; k < num_inputs; ++k) {
    size_t most = 0;
    for (size_t s = 0; s < num_sets; ++s) {
      size_t n = element_count(sets[s].rank[k], sets[s].dims[k]) * loom_dtype_size(inputs[k].dtype);
      if (n > most) most = n;
    }
    inputs[k].capacity = most;
    inputs[k].buffer = malloc(most ? most : 1);
    if (!inputs[k].buffer) die(1, "out of memory");
  }

  loom_session_options_t so;
  memset(&so, 0, sizeof so);
  so.struct_size = sizeof so;
  so.devices = devices;
  so.threads = threads;
  so.plan_cache_entries = plan_cache;
  start = now_ms();
  loom_session_t* session = NULL;
  check(loom_session_create(runtime, model, &so, &session), "cannot create a session");
  double session_ms = now_ms() - start;
  /* As infer-run does: the session keeps its own reference, and without ours the weights its
   * devices copied at compile can be freed. */
  loom_model_free(model);

  /* ---- runs ---- */
  const char* names[MAX_INPUTS];
  loom_host_tensor_t tensors[MAX_INPUTS];
  for (size_t k = 0; k < num_inputs; ++k) names[k] = inputs[k].name;
  loom_host_tensor_t* outputs = calloc(num_outputs ? num_outputs : 1, sizeof *outputs);
  bool* seen = calloc(num_sets, sizeof *seen);
  memory_t before = read_memory(), after_early = {-1, -1};
  for (long run = 0; run < runs; ++run) {
    size_t s = (size_t)run % num_sets;
    set_t* set = &sets[s];
    for (size_t k = 0; k < num_inputs; ++k) {
      input_t* in = &inputs[k];
      size_t n = element_count(set->rank[k], set->dims[k]);
      uint64_t state = seed * 0x100000001B3ull ^ ((uint64_t)s << 40) ^ ((uint64_t)k << 20) ^
                       (uint64_t)run;
      for (size_t e = 0; e < n; ++e) {
        double u = uniform01(&state);
        double v = in->lo + u * (in->hi - in->lo);
        switch (in->dtype) {
          case LOOM_DTYPE_FLOAT32: ((float*)in->buffer)[e] = (float)v; break;
          case LOOM_DTYPE_FLOAT64: ((double*)in->buffer)[e] = v; break;
          case LOOM_DTYPE_INT64: ((int64_t*)in->buffer)[e] = (int64_t)v; break;
          case LOOM_DTYPE_INT32: ((int32_t*)in->buffer)[e] = (int32_t)v; break;
          case LOOM_DTYPE_INT8: ((int8_t*)in->buffer)[e] = (int8_t)v; break;
          case LOOM_DTYPE_UINT8: ((uint8_t*)in->buffer)[e] = (uint8_t)v; break;
          case LOOM_DTYPE_BOOL: ((uint8_t*)in->buffer)[e] = (uint8_t)v; break;
          default: break;
        }
      }
      memset(&tensors[k], 0, sizeof tensors[k]);
      tensors[k].struct_size = sizeof tensors[k];
      tensors[k].dtype = in->dtype;
      tensors[k].rank = set->rank[k];
      memcpy(tensors[k].dims, set->dims[k], sizeof tensors[k].dims);
      tensors[k].data = in->buffer;
      tensors[k].byte_size = n * loom_dtype_size(in->dtype);
    }
    for (size_t o = 0; o < num_outputs; ++o) {
      memset(&outputs[o], 0, sizeof outputs[o]);
      outputs[o].struct_size = sizeof outputs[o];
    }
    start = now_ms();
    loom_status_t* status =
        loom_session_run(session, num_inputs, names, tensors, num_outputs, outputs);
    double ms = now_ms() - start;
    if (status) {
      fprintf(stderr, "cycle_shapes: error: run %ld (shapes %s): %s\n", run, set->text,
              loom_status_message(status));
      loom_status_free(status);
      return 1;
    }
    for (size_t o = 0; o < num_outputs; ++o) loom_host_tensor_release(&outputs[o]);
    if (!seen[s]) {
      seen[s] = true;
      set->first_ms = ms;
    } else {
      set->later_ms[set->num_later++] = ms;
    }
    if (run + 1 == early) after_early = read_memory();
  }
  memory_t after_all = read_memory();

  loom_plan_cache_stats_t stats;
  memset(&stats, 0, sizeof stats);
  stats.struct_size = sizeof stats;
  check(loom_session_plan_cache_stats(session, &stats), "cannot read the plan cache");

  /* ---- report ---- */
  printf("{\"model\":");
  json_string(model_path);
  printf(",\"devices\":");
  json_string(devices);
  printf(",\"threads\":%d,\"runs\":%ld,\"early_runs\":%ld,\"load_ms\":%.3f,\"session_ms\":%.3f",
         threads, runs, early, load_ms, session_ms);
  printf(",\"memory_kib\":{\"before_runs\":{\"vm_hwm\":%ld,\"vm_rss\":%ld}", before.hwm_kib,
         before.rss_kib);
  if (after_early.hwm_kib >= 0)
    printf(",\"after_early\":{\"vm_hwm\":%ld,\"vm_rss\":%ld}", after_early.hwm_kib,
           after_early.rss_kib);
  else
    printf(",\"after_early\":null");
  printf(",\"after_all\":{\"vm_hwm\":%ld,\"vm_rss\":%ld}}", after_all.hwm_kib, after_all.rss_kib);
  printf(",\"plan_cache\":");
  printf("{\"entries\":%zu,\"bytes\":%zu,\"capacity_entries\":%zu,\"capacity_bytes\":%zu,"
           "\"hits\":%" PRIu64 ",\"misses\":%" PRIu64 ",\"evictions\":%" PRIu64 "}",
           stats.entries, stats.bytes, stats.capacity_entries, stats.capacity_bytes, stats.hits,
           stats.misses, stats.evictions);
  printf(",\"sets\":[");
  for (size_t s = 0; s < num_sets; ++s) {
    set_t* set = &sets[s];
    printf("%s{\"shapes\":", s ? "," : "");
    json_string(set->text);
    size_t later = set->num_later;
    printf(",\"runs\":%zu", (size_t)(seen[s] ? 1 : 0) + later);
    if (seen[s])
      printf(",\"first_run_ms\":%.3f", set->first_ms);
    else
      printf(",\"first_run_ms\":null");
    if (later)
      printf(",\"later_median_ms\":%.3f}", median(set->later_ms, later));
    else
      printf(",\"later_median_ms\":null}");
  }
  printf("]}\n");

  loom_session_destroy(session);
  loom_runtime_destroy(runtime);
  for (size_t k = 0; k < num_inputs; ++k) {
    free(inputs[k].name);
    free(inputs[k].buffer);
  }
  for (size_t s = 0; s < num_sets; ++s) free(sets[s].later_ms);
  free(sets);
  free(seen);
  free(outputs);
  return 0;
}
