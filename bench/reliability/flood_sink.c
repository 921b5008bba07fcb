/*
 * flood_sink: the reader of bench/reliability/flood.mjs (built there with `cc -O2`).
 *
 * Reads stdin to EOF in 1 MiB reads. Lines that start with a digit are the flood's printf events and are only
 * counted; every other line (the maps bpfscope prints at exit, e.g. `@n: 1234`) is copied to stdout as it is. At EOF
 * one last line: `flood_sink events=N bytes=B`.
 */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
  static char buf[1 << 20];
  uint64_t events = 0, bytes = 0;
  int at_start = 1, copying = 0;
  for (;;) {
    ssize_t n = read(0, buf, sizeof buf);
    if (n <= 0) break;
    bytes += (uint64_t)n;
    for (ssize_t i = 0; i < n; i++) {
      char c = buf[i];
      if (at_start) {
        at_start = 0;
        if (c >= '0' && c <= '9') {
          events++;
          copying = 0;
        } else {
          copying = 1;
        }
      }
      if (copying) putchar(c);
      if (c == '\n') at_start = 1;
    }
  }
  printf("flood_sink events=%llu bytes=%llu\n", (unsigned long long)events, (unsigned long long)bytes);
  return 0;
}
