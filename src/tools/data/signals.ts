/**
 * Signal numbers → names without the `SIG` prefix, as bcc's exitsnoop builds them from Python's `signal` module
 * (`SIGNUM_TO_SIGNAME`: every attribute matching `^SIG[A-Z]+$`, later aliases replacing earlier ones). Taken from
 * CPython 3.11 on Linux x86-64 glibc (the same numbers on aarch64). Because the pattern has no digits, SIGUSR1 (10)
 * and SIGUSR2 (12) are missing and bcc prints them as `unknown`; the aliases that win are ABRT (not IOT), CHLD
 * (not CLD) and POLL (not IO).
 */
export const PYTHON_SIGNAL_NAMES: Readonly<Record<number, string>> = {
  1: 'HUP',
  2: 'INT',
  3: 'QUIT',
  4: 'ILL',
  5: 'TRAP',
  6: 'ABRT',
  7: 'BUS',
  8: 'FPE',
  9: 'KILL',
  11: 'SEGV',
  13: 'PIPE',
  14: 'ALRM',
  15: 'TERM',
  16: 'STKFLT',
  17: 'CHLD',
  18: 'CONT',
  19: 'STOP',
  20: 'TSTP',
  21: 'TTIN',
  22: 'TTOU',
  23: 'URG',
  24: 'XCPU',
  25: 'XFSZ',
  26: 'VTALRM',
  27: 'PROF',
  28: 'WINCH',
  29: 'POLL',
  30: 'PWR',
  31: 'SYS',
  34: 'RTMIN',
  64: 'RTMAX',
};
