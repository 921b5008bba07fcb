/*
 * bpfs_sink: the reading end of the streaming benchmark's pipe (bench/run.mjs builds it with `cc -O2`).
 * Reads stdin to EOF and prints one JSON object: lines that start with a digit (the printf events), the sum of
 * "Lost N events" lines (bpftrace 0.17 prints them on stdout), total bytes, and the CLOCK_MONOTONIC time in ns of the
 * first and last event line's arrival (comparable with Node's process.hrtime).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(void) {
  static char buf[1 << 20];
  char line[256];
  size_t ll = 0;
  uint64_t events = 0, lost = 0, bytes = 0, first = 0, last = 0;
  int at_start = 1;
  for (;;) {
    ssize_t n = read(0, buf, sizeof buf);
    if (n <= 0) break;
    bytes += (uint64_t)n;
    uint64_t t = now_ns();
    for (ssize_t i = 0; i < n; i++) {
      char c = buf[i];
      if (at_start) {
        at_start = 0;
        ll = 0;
        if (c >= '0' && c <= '9') {
          events++;
          if (!first) first = t;
          last = t;
        }
      }
      if (ll < sizeof line - 1) line[ll++] = c;
      if (c == '\n') {
        line[ll] = 0;
        if (strncmp(line, "Lost ", 5) == 0) lost += strtoull(line + 5, NULL, 10);
        at_start = 1;
      }
    }
  }
  printf("{\"events\":%llu,\"lost\":%llu,\"bytes\":%llu,\"first_ns\":%llu,\"last_ns\":%llu}\n",
         (unsigned long long)events, (unsigned long long)lost, (unsigned long long)bytes,
         (unsigned long long)first, (unsigned long long)last);
  return 0;
}
