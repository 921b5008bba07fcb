/**
 * Kernel feature probes (DESIGN.md decision 5: detected, not assumed). Each probe actually tries the thing: creates
 * the map, loads a trivial program of the type/attach type, attaches it where attaching is the question, and closes
 * everything again. Results are cached per process; every probe is lazy, so asking for one costs only that one
 * (a few loads of 2-instruction programs, well under a millisecond each; the BTF-based ones read vmlinux BTF).
 *
 * Without privileges every probe reports false.
 */
import { readFileSync } from 'node:fs';
import {
  linkCreate,
  mapCreate,
  mapLookupBatch,
  progLoad,
  progTestRun,
  rawTracepointOpen,
  VerifierError,
} from './bpf.js';
import { Btf, BtfKind } from './btf.js';
import { close } from './ffi.js';
import { openProbeEvent, openSoftwareEvent, probePmu, SwEvent } from './perf.js';

// Numbers from include/uapi/linux/bpf.h (kept local: this module sits below src/bpf/).
const PROG_KPROBE = 2;
const PROG_TRACEPOINT = 5;
const PROG_PERF_EVENT = 7;
const PROG_RAW_TRACEPOINT = 17;
const PROG_TRACING = 26;
const ATTACH_TRACE_RAW_TP = 23;
const ATTACH_TRACE_FENTRY = 24;
const ATTACH_PERF_EVENT = 41;
const ATTACH_KPROBE_MULTI = 42;
const ATTACH_UPROBE_MULTI = 48;
const MAP_HASH = 1;
const MAP_RINGBUF = 27;

/** `r0 = 0; exit`: the smallest valid program of any tracing type. */
const RET0 = Buffer.from([0xb7, 0, 0, 0, 0, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0]);

/** What this kernel (and our privileges) allow. */
export interface Features {
  /** BPF_MAP_TYPE_RINGBUF maps (5.8). */
  ringbuf: boolean;
  /** Classic tracepoint programs attached through perf events. */
  tracepoint: boolean;
  /** raw_tp programs and BPF_RAW_TRACEPOINT_OPEN (4.17). */
  rawTracepoint: boolean;
  /** BPF_PROG_TEST_RUN of raw_tp programs (used for BEGIN/END, 5.10). */
  rawTracepointTestRun: boolean;
  /** tp_btf: TRACING programs with attach type TRACE_RAW_TP (5.5), needs vmlinux BTF. */
  tpBtf: boolean;
  /** kprobe PMU perf events (no CONFIG_KPROBES on the development VM). */
  kprobe: boolean;
  /** kprobe_multi links (5.18, fprobe based). */
  kprobeMulti: boolean;
  /** fentry TRACING programs (5.5; EPERM on the development VM). */
  fentry: boolean;
  /** uprobe PMU perf events. */
  uprobe: boolean;
  /** uprobe_multi links (6.6). */
  uprobeMulti: boolean;
  /** BPF_LINK_CREATE on perf events (5.15; carries the bpf cookie). */
  perfLink: boolean;
  /** Map batch operations (5.6). */
  batchOps: boolean;
  /** Kernel BTF at /sys/kernel/btf/vmlinux. */
  btf: boolean;
}

const cache = new Map<keyof Features, boolean>();

function cached(name: keyof Features, probe: () => boolean): boolean {
  const hit = cache.get(name);
  if (hit !== undefined) return hit;
  let ok: boolean;
  try {
    ok = probe();
  } catch {
    ok = false;
  }
  cache.set(name, ok);
  return ok;
}

/** Loads `RET0` (or `insns`) as `type`; returns the fd or throws. */
function load(type: number, opts: { expectedAttachType?: number; attachBtfId?: number; insns?: Buffer } = {}): number {
  return progLoad({
    progType: type,
    insns: opts.insns ?? RET0,
    name: 'bpfscope_probe',
    license: 'GPL',
    ...(opts.expectedAttachType !== undefined ? { expectedAttachType: opts.expectedAttachType } : {}),
    ...(opts.attachBtfId !== undefined ? { attachBtfId: opts.attachBtfId } : {}),
  }).fd;
}

/**
 * Whether the trivial program `r0 = 0; exit` loads as `type` with these attributes (closed again at once): a feature
 * probe for callers outside this module (`--info`).
 */
export function programLoads(type: number, opts: { expectedAttachType?: number; attachBtfId?: number } = {}): boolean {
  try {
    close(load(type, opts));
    return true;
  } catch {
    return false;
  }
}

/** Runs `fn(fd)` with a loaded probe program, closing it afterwards. */
function withProg(fd: number, fn: (fd: number) => boolean): boolean {
  try {
    return fn(fd);
  } finally {
    close(fd);
  }
}

function vmlinuxBtf(): Btf | undefined {
  try {
    return Btf.vmlinux();
  } catch {
    return undefined;
  }
}

/** Kernel functions tried as fentry/kprobe targets (present in every recent kernel). */
const PROBE_FUNCS = ['do_nanosleep', 'vfs_read', 'do_sys_openat2'];

function probeRingbuf(): boolean {
  close(mapCreate({ mapType: MAP_RINGBUF, keySize: 0, valueSize: 0, maxEntries: 4096, name: 'bpfscope_probe' }));
  return true;
}

function probeTracepoint(): boolean {
  return withProg(load(PROG_TRACEPOINT), () => true);
}

function probeRawTracepoint(): boolean {
  return withProg(load(PROG_RAW_TRACEPOINT), (fd) => {
    close(rawTracepointOpen('sched_switch', fd));
    return true;
  });
}

function probeRawTpTestRun(): boolean {
  return withProg(load(PROG_RAW_TRACEPOINT), (fd) => progTestRun(fd, { ctxIn: Buffer.alloc(8) }).retval === 0);
}

function probeTpBtf(): boolean {
  const btf = vmlinuxBtf();
  const id = btf?.typedefId('btf_trace_sched_switch');
  if (id === undefined) return false;
  return withProg(load(PROG_TRACING, { expectedAttachType: ATTACH_TRACE_RAW_TP, attachBtfId: id }), (fd) => {
    close(rawTracepointOpen(null, fd));
    return true;
  });
}

function probeFentry(): boolean {
  const btf = vmlinuxBtf();
  if (!btf) return false;
  const fn = PROBE_FUNCS.map((f) => btf.findType(f, BtfKind.FUNC)).find((id) => id !== undefined);
  if (fn === undefined) return false;
  return withProg(load(PROG_TRACING, { expectedAttachType: ATTACH_TRACE_FENTRY, attachBtfId: fn }), (fd) => {
    close(rawTracepointOpen(null, fd));
    return true;
  });
}

function probeKprobe(): boolean {
  if (!probePmu('kprobe')) return false;
  return withProg(load(PROG_KPROBE), (fd) => {
    for (const f of PROBE_FUNCS) {
      let ev: ReturnType<typeof openProbeEvent> | undefined;
      try {
        ev = openProbeEvent({ kind: 'kprobe', target: f });
        ev.attach(fd);
        return true;
      } catch {
        // try the next function
      } finally {
        ev?.close();
      }
    }
    return false;
  });
}

function probeKprobeMulti(): boolean {
  return withProg(load(PROG_KPROBE, { expectedAttachType: ATTACH_KPROBE_MULTI }), (fd) => {
    for (const f of PROBE_FUNCS) {
      try {
        close(linkCreate(fd, 0, ATTACH_KPROBE_MULTI, { kind: 'kprobe_multi', syms: [f] }));
        return true;
      } catch {
        // try the next function
      }
    }
    return false;
  });
}

function probeUprobe(): boolean {
  return probePmu('uprobe') !== null;
}

/**
 * File offset of the ELF entry point of `path` (a valid instruction boundary to place a probe on): e_entry minus
 * (p_vaddr - p_offset) of the PT_LOAD segment holding it. ELF64 little-endian only; undefined otherwise.
 */
export function elfEntryFileOffset(path: string): bigint | undefined {
  let f: Buffer;
  try {
    f = readFileSync(path);
  } catch {
    return undefined;
  }
  if (f.length < 64 || f.readUInt32BE(0) !== 0x7f454c46 || f[4] !== 2 || f[5] !== 1) return undefined;
  const entry = f.readBigUInt64LE(0x18);
  const phoff = Number(f.readBigUInt64LE(0x20));
  const phentsize = f.readUInt16LE(0x36);
  const phnum = f.readUInt16LE(0x38);
  for (let i = 0; i < phnum; i++) {
    const ph = phoff + i * phentsize;
    if (ph + 56 > f.length) return undefined;
    if (f.readUInt32LE(ph) !== 1 /* PT_LOAD */) continue;
    const offset = f.readBigUInt64LE(ph + 8);
    const vaddr = f.readBigUInt64LE(ph + 16);
    const filesz = f.readBigUInt64LE(ph + 32);
    if (entry >= vaddr && entry < vaddr + filesz) return entry - (vaddr - offset);
  }
  return undefined;
}

function probeUprobeMulti(): boolean {
  const path = ['/bin/true', '/usr/bin/true'].find((p) => elfEntryFileOffset(p) !== undefined);
  if (!path) return false;
  const offset = elfEntryFileOffset(path)!;
  return withProg(load(PROG_KPROBE, { expectedAttachType: ATTACH_UPROBE_MULTI }), (fd) => {
    // Only our own process (which never runs that file's code) could hit it.
    close(linkCreate(fd, 0, ATTACH_UPROBE_MULTI, { kind: 'uprobe_multi', path, offsets: [offset], pid: process.pid }));
    return true;
  });
}

function probePerfLink(): boolean {
  const ev = openSoftwareEvent(SwEvent.CPU_CLOCK, { samplePeriod: 1n << 40n }, { cpu: 0 });
  try {
    return withProg(load(PROG_PERF_EVENT), (fd) => {
      close(linkCreate(fd, ev.fd, ATTACH_PERF_EVENT, { kind: 'perf_event' }));
      return true;
    });
  } finally {
    ev.close();
  }
}

function probeBatchOps(): boolean {
  const fd = mapCreate({ mapType: MAP_HASH, keySize: 4, valueSize: 4, maxEntries: 1, name: 'bpfscope_probe' });
  try {
    // An empty hash map answers ENOENT (done) when batch lookups exist, EINVAL otherwise.
    mapLookupBatch(fd, null, Buffer.alloc(8), Buffer.alloc(4), Buffer.alloc(4), 1);
    return true;
  } finally {
    close(fd);
  }
}

function probeBtf(): boolean {
  return vmlinuxBtf() !== undefined;
}

const PROBES: { [K in keyof Features]: () => boolean } = {
  ringbuf: probeRingbuf,
  tracepoint: probeTracepoint,
  rawTracepoint: probeRawTracepoint,
  rawTracepointTestRun: probeRawTpTestRun,
  tpBtf: probeTpBtf,
  kprobe: probeKprobe,
  kprobeMulti: probeKprobeMulti,
  fentry: probeFentry,
  uprobe: probeUprobe,
  uprobeMulti: probeUprobeMulti,
  perfLink: probePerfLink,
  batchOps: probeBatchOps,
  btf: probeBtf,
};

/** Whether feature `name` works here (probed on first ask, then cached). */
export function hasFeature(name: keyof Features): boolean {
  return cached(name, PROBES[name]);
}

/** What `--no-feature` may turn off (bpftrace's BPFnofeature names): its name here, if bpfscope has one. */
export const OPTIONAL_FEATURES: Record<string, keyof Features | null> = {
  kprobe_multi: 'kprobeMulti',
  uprobe_multi: 'uprobeMulti',
  // bpfscope never merges kprobe/kretprobe pairs into kprobe sessions: nothing to turn off
  kprobe_session: null,
};

const disabled = new Set<string>();

/** `--no-feature NAME`: treat the feature as missing from now on (NAME is a key of {@link OPTIONAL_FEATURES}). */
export function disableFeature(name: string): void {
  disabled.add(name);
  const f = OPTIONAL_FEATURES[name];
  if (f) cache.set(f, false);
}

/** Whether `--no-feature` turned `name` (a key of {@link OPTIONAL_FEATURES}) off. */
export function featureDisabled(name: string): boolean {
  return disabled.has(name);
}

/** All feature probes (each cached). */
export function features(): Features {
  const out = {} as Features;
  for (const k of Object.keys(PROBES) as (keyof Features)[]) out[k] = hasFeature(k);
  return out;
}

/**
 * Whether programs of `progType` may call helper `helperId` (libbpf's method: load a call with zeroed arguments and
 * look for "invalid func", "unknown func" or "cannot use helper" in the verifier log; any other rejection means the helper
 * exists but wants other arguments). Cached.
 */
export function hasHelper(progType: number, helperId: number): boolean {
  const key = `${progType}:${helperId}`;
  const hit = helperCache.get(key);
  if (hit !== undefined) return hit;
  // r1..r5 = 0; call helperId; r0 = 0; exit
  const insns = Buffer.alloc(8 * 8);
  for (let r = 1; r <= 5; r++) insns.set([0xb7, r, 0, 0, 0, 0, 0, 0], (r - 1) * 8);
  insns.set([0x85, 0, 0, 0], 40);
  insns.writeInt32LE(helperId, 44);
  insns.set([0xb7, 0, 0, 0, 0, 0, 0, 0], 48);
  insns.set([0x95, 0, 0, 0, 0, 0, 0, 0], 56);
  let ok: boolean;
  try {
    close(load(progType, { insns }));
    ok = true;
  } catch (e) {
    ok = e instanceof VerifierError && !/invalid func|unknown func|cannot use helper|cannot call/.test(e.log);
  }
  helperCache.set(key, ok);
  return ok;
}

const helperCache = new Map<string, boolean>();

/** Forgets cached results (tests). */
export function resetFeatureCache(): void {
  disabled.clear();
  cache.clear();
  helperCache.clear();
}
