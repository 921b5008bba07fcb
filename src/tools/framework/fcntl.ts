/**
 * open(2) flag values as Python's `os.O_*` gives them (glibc's <fcntl.h>), which bcc's opensnoop uses for `-f`
 * and for its MODE column. x86-64 values checked with CPython 3.11 on Debian 12; aarch64 values from the
 * kernel's `arch/arm64/include/uapi/asm/fcntl.h` (O_DIRECTORY, O_NOFOLLOW, O_DIRECT, O_TMPFILE differ) with
 * glibc's `__O_LARGEFILE 0` for LP64.
 */
import { arch } from 'node:os';

const COMMON: Record<string, number> = {
  O_RDONLY: 0,
  O_WRONLY: 0o1,
  O_RDWR: 0o2,
  O_ACCMODE: 0o3,
  O_CREAT: 0o100,
  O_EXCL: 0o200,
  O_NOCTTY: 0o400,
  O_TRUNC: 0o1000,
  O_APPEND: 0o2000,
  O_NONBLOCK: 0o4000,
  O_NDELAY: 0o4000,
  O_DSYNC: 0o10000,
  O_ASYNC: 0o20000,
  O_SYNC: 0o4010000,
  O_FSYNC: 0o4010000,
  O_RSYNC: 0o4010000,
  O_LARGEFILE: 0,
  O_NOATIME: 0o1000000,
  O_CLOEXEC: 0o2000000,
  O_PATH: 0o10000000,
};

const X86_64: Record<string, number> = {
  ...COMMON,
  O_DIRECT: 0o40000,
  O_DIRECTORY: 0o200000,
  O_NOFOLLOW: 0o400000,
  O_TMPFILE: 0o20200000,
};

const AARCH64: Record<string, number> = {
  ...COMMON,
  O_DIRECTORY: 0o40000,
  O_NOFOLLOW: 0o100000,
  O_DIRECT: 0o200000,
  O_TMPFILE: 0o20040000,
};

/** The `O_*` table of `machine` (Node's `os.arch()` names; x86-64 values for other architectures). */
export function openFlags(machine: string = arch()): Readonly<Record<string, number>> {
  return machine === 'arm64' ? AARCH64 : X86_64;
}
