/**
 * The one module that talks to libc through koffi (DESIGN.md decision 2). Everything above it sees typed wrappers.
 *
 * koffi and libc are loaded lazily, on the first wrapper call, so importing this module (and everything that imports
 * it) costs nothing at startup. The wrappers are "raw": they return the C result (or `-errno` where noted) and never
 * throw on a failed system call; callers decide which errno is an answer (ENOENT at the end of a map walk) and which
 * is an error, and build the error with {@link kernelError}. Pointers placed inside kernel structures (`union
 * bpf_attr`, `perf_event_attr`) are the addresses of Node Buffers from {@link address}: the caller must keep the
 * Buffer referenced until the system call returns.
 *
 * Sources: syscall numbers from `arch/x86/entry/syscalls/syscall_64.tbl` and `include/uapi/asm-generic/unistd.h`
 * (aarch64); epoll, eventfd, mmap constants from `include/uapi/linux/{eventpoll,eventfd}.h` and
 * `include/uapi/asm-generic/mman-common.h`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { KernelError } from '../errors.js';

type Koffi = typeof import('koffi');
type KFunc = ((...args: unknown[]) => unknown) & {
  async: (...args: unknown[]) => void;
};

/** An opaque native pointer returned by libc (e.g. by mmap). */
export type NativePointer = unknown;

interface Libc {
  koffi: Koffi;
  bpf: KFunc;
  perfEventOpen: KFunc;
  ioctl: KFunc;
  mmap: KFunc;
  munmap: KFunc;
  close: KFunc;
  read: KFunc;
  write: KFunc;
  poll: KFunc;
  send: KFunc;
  eventfd: KFunc;
  epollCreate1: KFunc;
  epollCtl: KFunc;
  epollWait: KFunc;
  strerror: KFunc;
  strsignal: KFunc;
  getpagesize: KFunc;
}

let libc: Libc | undefined;

/**
 * koffi, by the short way when it is there: its native module straight from its platform package
 * (`@koromix/koffi-<platform>-<arch>/<platform>_<arch>/koffi.node`, the glibc build: bpfscope calls libc.so.6, so
 * the C library is glibc), found where `require('koffi')` would find koffi and that koffi's own `require` its
 * platform package (koffi's node_modules, then the directory holding koffi), and only when the module's `version` is
 * that koffi's package.json version (the check koffi's loader makes). Otherwise, `require('koffi')`. The object is
 * the same native module either way: koffi's JavaScript entry (index.cjs) only finds that file (resolving its
 * package's `exports` map, reading the ELF interpreter of the node binary to tell glibc from musl) and wraps
 * deprecated aliases bpfscope does not call (cdecl/stdcall, resolve, introspect, register with a `this`). Why:
 * that entry costs every tool 13-21 ms of CPU at its start (load ~20, Node's ES module resolver loaded for
 * `exports`, three JavaScript files compiled without a code cache), the module alone 2-3 ms (issue 13).
 */
function requireKoffi(require: NodeJS.Require): Koffi {
  const platformDir = `${process.platform}_${process.arch}`;
  for (const dir of require.resolve.paths('koffi') ?? []) {
    let version: unknown;
    try {
      version = (JSON.parse(readFileSync(join(dir, 'koffi', 'package.json'), 'utf8')) as { version?: unknown }).version;
    } catch {
      continue; // no koffi here: Node looks in the next directory up
    }
    for (const base of [join(dir, 'koffi', 'node_modules'), dir]) {
      const file = join(base, '@koromix', `koffi-${process.platform}-${process.arch}`, platformDir, 'koffi.node');
      if (!existsSync(file)) continue;
      const native = require(file) as Koffi & { version?: unknown };
      if (typeof version === 'string' && native.version === version) return native;
      break;
    }
    break;
  }
  return require('koffi') as Koffi;
}

function load(): Libc {
  if (libc) return libc;
  const koffi = requireKoffi(createRequire(import.meta.url));
  const lib = koffi.load('libc.so.6');
  const f = (name: string, ret: string, args: string[]): KFunc => lib.func(name, ret, args) as unknown as KFunc;
  // Fixed-argument prototypes for the variadic syscall(2) and ioctl(2): integer arguments travel in the same
  // registers either way on x86-64 and aarch64 Linux, fixed prototypes are faster in koffi, and `.async` needs them.
  libc = {
    koffi,
    bpf: f('syscall', 'long', ['long', 'long', 'void *', 'ulong']),
    perfEventOpen: f('syscall', 'long', ['long', 'void *', 'int', 'int', 'int', 'ulong']),
    ioctl: f('ioctl', 'int', ['int', 'ulong', 'ulong']),
    mmap: f('mmap', 'void *', ['void *', 'size_t', 'int', 'int', 'int', 'int64']),
    munmap: f('munmap', 'int', ['void *', 'size_t']),
    close: f('close', 'int', ['int']),
    read: f('read', 'long', ['int', 'void *', 'size_t']),
    write: f('write', 'long', ['int', 'void *', 'size_t']),
    poll: f('poll', 'int', ['void *', 'ulong', 'int']),
    send: f('send', 'long', ['int', 'void *', 'size_t', 'int']),
    eventfd: f('eventfd', 'int', ['uint', 'int']),
    epollCreate1: f('epoll_create1', 'int', ['int']),
    epollCtl: f('epoll_ctl', 'int', ['int', 'int', 'int', 'void *']),
    epollWait: f('epoll_wait', 'int', ['int', 'void *', 'int', 'int']),
    strerror: f('strerror', 'const char *', ['int']),
    strsignal: f('strsignal', 'const char *', ['int']),
    getpagesize: f('getpagesize', 'int', []),
  };
  return libc;
}

/** True once koffi has been loaded (used by tests to check that importing costs nothing). */
export function isLoaded(): boolean {
  return libc !== undefined;
}

/** Syscall numbers for this machine (x86-64 or aarch64); throws KernelError (ENOSYS) on other architectures. */
function syscallNumbers(): { bpf: number; perfEventOpen: number } {
  switch (process.arch) {
    case 'x64':
      return { bpf: 321, perfEventOpen: 298 };
    case 'arm64':
      return { bpf: 280, perfEventOpen: 241 };
    default:
      throw new KernelError('syscall', 38, `bpfscope does not know the bpf() syscall number on ${process.arch}`, {
        hint: 'supported architectures: x86-64 and aarch64',
      });
  }
}

let nrs: { bpf: number; perfEventOpen: number } | undefined;

/** errno numbers bpfscope handles by name (Linux `include/uapi/asm-generic/errno{,-base}.h`, `include/linux/errno.h`). */
export const Errno = {
  EPERM: 1,
  ENOENT: 2,
  ESRCH: 3,
  EINTR: 4,
  E2BIG: 7,
  EBADF: 9,
  EAGAIN: 11,
  ENOMEM: 12,
  EACCES: 13,
  EFAULT: 14,
  EBUSY: 16,
  EEXIST: 17,
  ENODEV: 19,
  EINVAL: 22,
  ENOSPC: 28,
  EPIPE: 32,
  ENOSYS: 38,
  EOPNOTSUPP: 95,
  /** Kernel-internal "operation not supported" that leaks to user space from bpf() (no libc name). */
  ENOTSUPP: 524,
} as const;

const errnoNames = new Map<number, string>(Object.entries(Errno).map(([k, v]) => [v, k]));

/** The errno of the last failed libc call on this thread (read it right after the call). */
export function errno(): number {
  return load().koffi.errno();
}

/** strsignal(3) text for signal `sig` (glibc: `Interrupt`, `Real-time signal 0`, `Unknown signal 32`). */
export function strsignal(sig: number): string {
  return String(load().strsignal(sig));
}

/** strerror(3) text for `err`, with the kernel-only ENOTSUPP (524) named ("Operation not supported"). */
export function strerror(err: number): string {
  if (err === Errno.ENOTSUPP) return 'Operation not supported';
  return String(load().strerror(err));
}

/** Symbolic errno name (`ENOENT`) or `errno N`. */
export function errnoName(err: number): string {
  return errnoNames.get(err) ?? `errno ${err}`;
}

/**
 * Builds the KernelError for a failed call: message `<syscall>: <strerror> (<ENAME>)`, e.g.
 * `bpf(BPF_MAP_CREATE): Invalid argument (EINVAL)`.
 */
export function kernelError(syscall: string, err: number, hint?: string): KernelError {
  const msg = `${syscall}: ${strerror(err)} (${errnoName(err)})`;
  return new KernelError(syscall, err, msg, hint ? { hint } : {});
}

/** The address of a Buffer's first byte, for pointer fields of kernel structures (u64). */
export function address(buf: Buffer | Uint8Array | NativePointer): bigint {
  return load().koffi.address(buf);
}

/** A zero-copy ArrayBuffer over native memory (e.g. an mmap'ed region). Not shared: Atomics work, but no waits. */
export function view(ptr: NativePointer, len: number): ArrayBuffer {
  return load().koffi.view(ptr, len);
}

/** bpf(2): `syscall(SYS_bpf, cmd, attr, attr.length)`. Returns the result (>= 0) or `-errno`. */
export function sysBpf(cmd: number, attr: Buffer): number {
  const l = load();
  nrs ??= syscallNumbers();
  const r = Number(l.bpf(nrs.bpf, cmd, attr, attr.length));
  return r < 0 ? -l.koffi.errno() : r;
}

/**
 * bpf(2) on a libuv worker thread (koffi `.async`), for commands that spend long in the kernel (BPF_MAP_CREATE of a
 * preallocated hash map: tens of ms) while the main thread goes on. `cb(r)` gets the result (>= 0) or `-errno` on
 * the main thread. `attr` must stay untouched until then.
 */
export function sysBpfAsync(cmd: number, attr: Buffer, cb: (r: number) => void): void {
  const l = load();
  nrs ??= syscallNumbers();
  l.bpf.async(nrs.bpf, cmd, attr, attr.length, (err: unknown, res: unknown) => {
    if (err) return cb(-Errno.EINTR);
    // koffi sets errno to the worker call's errno around this callback.
    const r = Number(res);
    cb(r < 0 ? -l.koffi.errno() : r);
  });
}

/**
 * perf_event_open(2) with a filled `perf_event_attr` buffer. Returns the new fd or `-errno`.
 * `pid` -1 = any task, `cpu` -1 = any CPU (not both), `groupFd` -1 = no group, `flags` PERF_FLAG_* (FD_CLOEXEC 8).
 */
export function sysPerfEventOpen(attr: Buffer, pid: number, cpu: number, groupFd: number, flags: number): number {
  const l = load();
  nrs ??= syscallNumbers();
  const r = Number(l.perfEventOpen(nrs.perfEventOpen, attr, pid, cpu, groupFd, flags));
  return r < 0 ? -l.koffi.errno() : r;
}

/** ioctl(2) with an integer argument. Returns the result or `-errno`. */
export function ioctl(fd: number, request: number, arg: number | bigint): number {
  const l = load();
  const r = Number(l.ioctl(fd, request, arg));
  return r < 0 ? -l.koffi.errno() : r;
}

/** `PROT_*` and `MAP_*` values (asm-generic/mman-common.h, mman.h). */
export const PROT_READ = 1;
export const PROT_WRITE = 2;
export const MAP_SHARED = 1;

/**
 * mmap(2) of `len` bytes of `fd` at `offset` (bytes). Returns the mapping pointer, or `-errno` as a number when
 * mmap fails (libc returns MAP_FAILED = (void *)-1).
 */
export function mmap(len: number, prot: number, flags: number, fd: number, offset: number): NativePointer | number {
  const l = load();
  const p = l.mmap(null, len, prot, flags, fd, offset);
  if (p === null || l.koffi.address(p) === 0xffffffffffffffffn) return -l.koffi.errno();
  return p;
}

/** munmap(2). Returns 0 or `-errno`. */
export function munmap(ptr: NativePointer, len: number): number {
  const l = load();
  const r = Number(l.munmap(ptr, len));
  return r < 0 ? -l.koffi.errno() : r;
}

/** close(2). Returns 0 or `-errno`. Closing a negative fd is a no-op returning 0. */
export function close(fd: number): number {
  if (fd < 0) return 0;
  const l = load();
  const r = Number(l.close(fd));
  return r < 0 ? -l.koffi.errno() : r;
}

/** read(2) into `buf`. Returns bytes read or `-errno`. */
export function read(fd: number, buf: Buffer): number {
  const l = load();
  const r = Number(l.read(fd, buf, buf.length));
  return r < 0 ? -l.koffi.errno() : r;
}

/** write(2) of `buf`. Returns bytes written or `-errno`. */
export function write(fd: number, buf: Buffer): number {
  const l = load();
  const r = Number(l.write(fd, buf, buf.length));
  return r < 0 ? -l.koffi.errno() : r;
}

/** poll(2) event bits (include/uapi/asm-generic/poll.h). */
export const POLLOUT = 0x0004;

/**
 * poll(2) on one fd for `events`, blocking this thread up to `timeoutMs` (-1 = until ready). Returns the `revents`
 * bits (0 on timeout) or `-errno`; `-EINTR` when a signal handler ran meanwhile (poll is never restarted, SA_RESTART
 * or not), which is how a blocked wait learns that a signal (e.g. Ctrl-C) arrived.
 */
export function pollFd(fd: number, events: number, timeoutMs: number): number {
  const l = load();
  const pfd = Buffer.alloc(8); // struct pollfd { int fd; short events; short revents; }
  pfd.writeInt32LE(fd, 0);
  pfd.writeInt16LE(events, 4);
  const r = Number(l.poll(pfd, 1, timeoutMs));
  if (r < 0) return -l.koffi.errno();
  return r === 0 ? 0 : pfd.readUInt16LE(6);
}

/** `MSG_DONTWAIT | MSG_NOSIGNAL` (include/linux/socket.h): a send that never blocks and never raises SIGPIPE. */
const MSG_DONTWAIT_NOSIGNAL = 0x40 | 0x4000;

/** send(2) of `buf` on a socket without blocking. Returns the bytes sent or `-errno` (-EAGAIN when it is full). */
export function sendNoWait(fd: number, buf: Buffer): number {
  const l = load();
  const r = Number(l.send(fd, buf, buf.length, MSG_DONTWAIT_NOSIGNAL));
  return r < 0 ? -l.koffi.errno() : r;
}

/** `EFD_*` flags (include/uapi/linux/eventfd.h). */
export const EFD_NONBLOCK = 0o4000;
export const EFD_CLOEXEC = 0o2000000;

/** eventfd(2). Returns the fd or `-errno`. */
export function eventfd(initval: number, flags: number): number {
  const l = load();
  const r = Number(l.eventfd(initval, flags));
  return r < 0 ? -l.koffi.errno() : r;
}

/** epoll constants (include/uapi/linux/eventpoll.h). `struct epoll_event` is 12 bytes, packed, on x86-64. */
export const EPOLL_CLOEXEC = 0o2000000;
export const EPOLL_CTL_ADD = 1;
export const EPOLL_CTL_DEL = 2;
export const EPOLL_CTL_MOD = 3;
export const EPOLLIN = 0x001;
/** sizeof(struct epoll_event): packed 12 bytes on x86-64, 16 (u64 data aligned) on aarch64. */
export const EPOLL_EVENT_SIZE = process.arch === 'x64' ? 12 : 16;
const EPOLL_DATA_OFF = process.arch === 'x64' ? 4 : 8;

/** epoll_create1(2). Returns the fd or `-errno`. */
export function epollCreate1(flags: number): number {
  const l = load();
  const r = Number(l.epollCreate1(flags));
  return r < 0 ? -l.koffi.errno() : r;
}

/** epoll_ctl(2): `events` EPOLL* mask, `data` a u32 tag returned by epollWait. Returns 0 or `-errno`. */
export function epollCtl(epfd: number, op: number, fd: number, events: number, data: number): number {
  const l = load();
  const ev = Buffer.alloc(EPOLL_EVENT_SIZE);
  ev.writeUInt32LE(events >>> 0, 0);
  ev.writeUInt32LE(data >>> 0, EPOLL_DATA_OFF);
  const r = Number(l.epollCtl(epfd, op, fd, ev));
  return r < 0 ? -l.koffi.errno() : r;
}

/** Reads the u32 `data` tag of event `i` in an epoll_wait result buffer. */
export function epollEventData(events: Buffer, i: number): number {
  return events.readUInt32LE(i * EPOLL_EVENT_SIZE + EPOLL_DATA_OFF);
}

/** epoll_wait(2), blocking this thread up to `timeoutMs` (-1 = forever). Returns the event count or `-errno`. */
export function epollWait(epfd: number, events: Buffer, timeoutMs: number): number {
  const l = load();
  const r = Number(l.epollWait(epfd, events, Math.floor(events.length / EPOLL_EVENT_SIZE), timeoutMs));
  return r < 0 ? -l.koffi.errno() : r;
}

/**
 * epoll_wait(2) on a libuv worker thread (koffi `.async`); `cb(n)` gets the event count or `-errno` on the main
 * thread. While the call is pending the Node event loop stays alive, and process teardown waits for the worker
 * thread: keep `timeoutMs` bounded and wake the wait (e.g. through an eventfd in the set) before exiting.
 */
export function epollWaitAsync(epfd: number, events: Buffer, timeoutMs: number, cb: (n: number) => void): void {
  const l = load();
  const max = Math.floor(events.length / EPOLL_EVENT_SIZE);
  l.epollWait.async(epfd, events, max, timeoutMs, (err: unknown, res: unknown) => {
    if (err) return cb(-Errno.EINTR);
    // koffi sets errno to the worker call's errno around this callback.
    const n = Number(res);
    cb(n < 0 ? -l.koffi.errno() : n);
  });
}

/** A libuv poll watcher on a file descriptor (koffi's uv_poll_t wrapper). */
export interface FdPoller {
  /** Restarts watching after stop(); `cb` runs when the fd is readable (or polling failed). */
  start(cb: () => void): void;
  stop(): void;
  close(): void;
  ref(): void;
  unref(): void;
}

type KoffiPollHandle = {
  start(opts: { readable: boolean }, cb: (...args: unknown[]) => void): void;
  stop(): void;
  close(): void;
  ref(): void;
  unref(): void;
};

/**
 * koffi 3.3 calls poll callbacks as `(status, {readable, writable, disconnect})` (its index.d.ts documents only the
 * second argument); accept either shape. A negative status (poll error) also wakes the caller, which then finds out.
 */
function pollCallback(cb: () => void): (...args: unknown[]) => void {
  return (a: unknown, b: unknown) => {
    const status = typeof a === 'number' ? a : 0;
    const ev = (typeof a === 'number' ? b : a) as { readable?: boolean } | undefined;
    if (status < 0 || ev?.readable) cb();
  };
}

/**
 * Watches `fd` for readability on the Node event loop itself (libuv `uv_poll_t` through koffi's `node.poll`), so
 * no thread is blocked and the watcher can be unref'd. Returns undefined when this koffi lacks the (undocumented)
 * API; callers then fall back to {@link epollWaitAsync}. The watcher starts at once.
 */
export function pollReadable(fd: number, cb: () => void): FdPoller | undefined {
  const k = load().koffi as unknown as {
    node?: { poll?: (fd: number, opts: { readable: boolean }, cb: (...args: unknown[]) => void) => KoffiPollHandle };
  };
  if (typeof k.node?.poll !== 'function') return undefined;
  const h = k.node.poll(fd, { readable: true }, pollCallback(cb));
  return {
    start: (again) => h.start({ readable: true }, pollCallback(again)),
    stop: () => h.stop(),
    close: () => h.close(),
    ref: () => h.ref(),
    unref: () => h.unref(),
  };
}

let cachedPageSize = 0;

/** The system page size in bytes (getpagesize(3); 4096 on x86-64, 4/16/64 KiB on aarch64). */
export function pageSize(): number {
  if (cachedPageSize === 0) cachedPageSize = Number(load().getpagesize());
  return cachedPageSize;
}

/** glibc's malloc statistics (mallinfo2(3), glibc 2.33+) and malloc_trim(3); null where the C library lacks them. */
let mallocFns: { mallinfo2: KFunc; trim: KFunc } | null | undefined;

function mallocFunctions(): { mallinfo2: KFunc; trim: KFunc } | null {
  if (mallocFns !== undefined) return mallocFns;
  try {
    const { koffi } = load();
    const lib = koffi.load('libc.so.6');
    // struct mallinfo2: ten size_t fields, in this order (glibc malloc/malloc.h)
    const info = koffi.struct('bpfscope_mallinfo2', {
      arena: 'size_t',
      ordblks: 'size_t',
      smblks: 'size_t',
      hblks: 'size_t',
      hblkhd: 'size_t',
      usmblks: 'size_t',
      fsmblks: 'size_t',
      uordblks: 'size_t',
      fordblks: 'size_t',
      keepcost: 'size_t',
    });
    mallocFns = {
      mallinfo2: lib.func('mallinfo2', info, []) as unknown as KFunc,
      trim: lib.func('malloc_trim', 'int', ['size_t']) as unknown as KFunc,
    };
  } catch {
    mallocFns = null; // not glibc 2.33+ (musl has neither)
  }
  return mallocFns;
}

/**
 * Bytes in free chunks of every malloc arena (mallinfo2(3)'s `fordblks`), whether their pages are resident or were
 * already given back; undefined where the C library has no mallinfo2 (glibc before 2.33, musl).
 */
export function mallocFreeBytes(): number | undefined {
  const f = mallocFunctions();
  if (!f) return undefined;
  return Number((f.mallinfo2() as { fordblks: number | bigint }).fordblks);
}

/**
 * malloc_trim(3) with no padding: gives the whole free pages of every malloc arena back to the kernel
 * (madvise(MADV_DONTNEED); they stay mapped and are faulted in again when reused). True if memory was released;
 * false also where the C library has no malloc_trim.
 */
export function mallocTrim(): boolean {
  const f = mallocFunctions();
  return f ? Number(f.trim(0)) === 1 : false;
}
