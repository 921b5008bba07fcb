/*
 * bpfs_bench: the traced workload of bpfscope's benchmarks (bench/run.mjs builds it with `cc -O2`).
 *
 *   bpfs_bench getppid N RATE OUT          N getppid(2) calls; RATE 0 = back to back, else RATE calls/s in 1 ms batches
 *   bpfs_bench getppid-for SECS RATE OUT   the same for SECS seconds instead of N calls
 *   bpfs_bench read SECS OUT               1-byte read(2)s of /dev/zero for SECS seconds (load for the latency program)
 *
 * OUT receives one JSON object: calls, ns spent inside the timed calls (the loop for RATE 0, only the batches
 * otherwise), the CLOCK_MONOTONIC start/end in ns (comparable with Node's process.hrtime and bpf_ktime_get_ns) and,
 * for RATE 0, the median and minimum ns per call over chunks of 10,000 calls (robust against preemption by other
 * processes on a busy machine).
 * OUT.started is created when the loop begins, so the harness can snapshot the tracer's CPU time then.
 * Timing uses CLOCK_MONOTONIC via the vDSO (no syscall).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void mark_started(const char *out) {
  char path[4096];
  snprintf(path, sizeof path, "%s.started", out);
  int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd >= 0) close(fd);
}

#define CHUNK 10000
#define MAX_CHUNKS 100000
static uint64_t chunk_ns[MAX_CHUNKS];
static size_t n_chunks;

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int write_result(const char *out, const char *mode, uint64_t calls, uint64_t inside_ns, uint64_t start,
                        uint64_t end) {
  double med = 0, min = 0;
  if (n_chunks) {
    qsort(chunk_ns, n_chunks, sizeof chunk_ns[0], cmp_u64);
    med = (double)chunk_ns[n_chunks / 2] / CHUNK;
    min = (double)chunk_ns[0] / CHUNK;
  }
  FILE *f = fopen(out, "w");
  if (!f) {
    perror(out);
    return 1;
  }
  fprintf(f,
          "{\"mode\":\"%s\",\"calls\":%llu,\"inside_ns\":%llu,\"start_ns\":%llu,\"end_ns\":%llu,\"pid\":%d,"
          "\"chunks\":%zu,\"chunk_median_ns\":%.3f,\"chunk_min_ns\":%.3f}\n",
          mode, (unsigned long long)calls, (unsigned long long)inside_ns, (unsigned long long)start,
          (unsigned long long)end, (int)getpid(), n_chunks, med, min);
  return fclose(f) != 0;
}

/* n calls, or (n == 0) until `stop` (CLOCK_MONOTONIC ns) */
static int run_getppid(uint64_t n, uint64_t stop, uint64_t rate, const char *out) {
  mark_started(out);
  uint64_t start = now_ns(), inside = 0, calls = 0;
  if (stop) stop += start;
  if (rate == 0) {
    uint64_t t = start;
    while (n ? calls < n : t < stop) {
      uint64_t b = n && n - calls < CHUNK ? n - calls : CHUNK;
      for (uint64_t i = 0; i < b; i++) syscall(SYS_getppid);
      uint64_t t1 = now_ns();
      if (b == CHUNK && n_chunks < MAX_CHUNKS) chunk_ns[n_chunks++] = t1 - t;
      t = t1;
      calls += b;
    }
    inside = t - start;
  } else {
    /* Batches every 1 ms (or one call per tick below 1000/s); only the batches are timed. */
    uint64_t per_tick = rate >= 1000 ? rate / 1000 : 1;
    uint64_t tick_ns = rate >= 1000 ? 1000000ull : 1000000000ull / rate;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (;;) {
      uint64_t t0 = now_ns();
      if (n ? calls >= n : t0 >= stop) break;
      uint64_t b = n && n - calls < per_tick ? n - calls : per_tick;
      for (uint64_t i = 0; i < b; i++) syscall(SYS_getppid);
      inside += now_ns() - t0;
      calls += b;
      next.tv_nsec += (long)tick_ns;
      while (next.tv_nsec >= 1000000000L) {
        next.tv_nsec -= 1000000000L;
        next.tv_sec++;
      }
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
  }
  return write_result(out, "getppid", calls, inside, start, now_ns());
}

static int run_read(double seconds, const char *out) {
  int fd = open("/dev/zero", O_RDONLY);
  if (fd < 0) {
    perror("/dev/zero");
    return 1;
  }
  char c;
  mark_started(out);
  uint64_t start = now_ns(), stop = start + (uint64_t)(seconds * 1e9), calls = 0;
  while (now_ns() < stop) {
    for (int i = 0; i < 1000; i++) {
      if (read(fd, &c, 1) != 1) return 1;
    }
    calls += 1000;
  }
  uint64_t end = now_ns();
  return write_result(out, "read", calls, end - start, start, end);
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "getppid") == 0)
    return run_getppid(strtoull(argv[2], NULL, 10), 0, strtoull(argv[3], NULL, 10), argv[4]);
  if (argc == 5 && strcmp(argv[1], "getppid-for") == 0) {
    uint64_t stop = (uint64_t)(strtod(argv[2], NULL) * 1e9);
    return run_getppid(0, stop ? stop : 1, strtoull(argv[3], NULL, 10), argv[4]);
  }
  if (argc == 4 && strcmp(argv[1], "read") == 0) return run_read(strtod(argv[2], NULL), argv[3]);
  fprintf(stderr, "usage: bpfs_bench getppid N RATE OUT | getppid-for SECS RATE OUT | read SECS OUT\n");
  return 2;
}
