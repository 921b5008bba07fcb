/** bpf(2) map commands (see bpf.ts): MAP_CREATE, element lookup/update/delete, walks and batched dumps. */
import { KernelError } from '../errors.js';
import { Errno, sysBpf, sysBpfAsync } from './ffi.js';
import { attr, BPF_ANY, BPF_ATTR_SIZE, BpfCmd, bpfError, call, ptr, writeObjName } from './bpf-attr.js';

/** Parameters of MAP_CREATE. Sizes in bytes. */
export interface MapCreateAttr {
  mapType: number;
  keySize: number;
  valueSize: number;
  maxEntries: number;
  /** `BPF_F_*` map flags (e.g. BPF_F_NO_PREALLOC 1). */
  flags?: number;
  /** Object name, shown by `bpftool map show` (sanitised, cut to 15 bytes). */
  name?: string;
  innerMapFd?: number;
  numaNode?: number;
  btfFd?: number;
  btfKeyTypeId?: number;
  btfValueTypeId?: number;
  /** `map_extra` (u64): bloom filter hash count, arena address. */
  mapExtra?: bigint;
}

/** BPF_MAP_CREATE: returns the new map fd. @throws KernelError */
export function mapCreate(p: MapCreateAttr): number {
  return call(BpfCmd.MAP_CREATE, mapCreateAttr(p, attr()), p.name ? `'${p.name}'` : undefined);
}

/**
 * BPF_MAP_CREATE on a worker thread: resolves to the new map fd, rejects with the same KernelError as
 * {@link mapCreate}. Preallocating a hash map of 10,240 entries takes the kernel 5-140 ms (PERCPU_HASH: one per-CPU
 * allocation per element), which the caller can spend on other work meanwhile.
 */
export function mapCreateAsync(p: MapCreateAttr): Promise<number> {
  // its own attr buffer: the scratch one is reused by the synchronous commands that run meanwhile
  const a = mapCreateAttr(p, Buffer.alloc(BPF_ATTR_SIZE));
  return new Promise((resolve, reject) => {
    sysBpfAsync(BpfCmd.MAP_CREATE, a, (r) => {
      if (r >= 0) resolve(r);
      else reject(bpfError(BpfCmd.MAP_CREATE, -r, p.name ? `'${p.name}'` : undefined));
    });
  });
}

/** Fills a zeroed `bpf_attr` for MAP_CREATE (`union bpf_attr`, include/uapi/linux/bpf.h). */
function mapCreateAttr(p: MapCreateAttr, a: Buffer): Buffer {
  a.writeUInt32LE(p.mapType, 0);
  a.writeUInt32LE(p.keySize, 4);
  a.writeUInt32LE(p.valueSize, 8);
  a.writeUInt32LE(p.maxEntries, 12);
  a.writeUInt32LE(p.flags ?? 0, 16);
  a.writeUInt32LE(p.innerMapFd ?? 0, 20);
  a.writeUInt32LE(p.numaNode ?? 0, 24);
  writeObjName(a, 28, p.name);
  a.writeUInt32LE(p.btfFd ?? 0, 48);
  a.writeUInt32LE(p.btfKeyTypeId ?? 0, 52);
  a.writeUInt32LE(p.btfValueTypeId ?? 0, 56);
  a.writeBigUInt64LE(p.mapExtra ?? 0n, 64);
  return a;
}

function elemAttr(fd: number, key: Buffer | null, value: Buffer | null, flags: number): Buffer {
  const a = attr();
  a.writeUInt32LE(fd, 0);
  a.writeBigUInt64LE(ptr(key), 8);
  a.writeBigUInt64LE(ptr(value), 16);
  a.writeBigUInt64LE(BigInt(flags), 24);
  return a;
}

/**
 * BPF_MAP_LOOKUP_ELEM: copies the value of `key` into `value` (its full user-space size: per-CPU maps need
 * `roundup(value_size, 8) * possible CPUs` bytes). Returns false when the key is absent (ENOENT). @throws KernelError
 */
export function mapLookup(fd: number, key: Buffer, value: Buffer, flags = 0): boolean {
  const r = sysBpf(BpfCmd.MAP_LOOKUP_ELEM, elemAttr(fd, key, value, flags));
  if (r >= 0) return true;
  if (r === -Errno.ENOENT) return false;
  throw bpfError(BpfCmd.MAP_LOOKUP_ELEM, -r);
}

/** BPF_MAP_UPDATE_ELEM with BPF_ANY/NOEXIST/EXIST. @throws KernelError (EEXIST, ENOENT, E2BIG when full, ...) */
export function mapUpdate(fd: number, key: Buffer, value: Buffer, flags = BPF_ANY): void {
  call(BpfCmd.MAP_UPDATE_ELEM, elemAttr(fd, key, value, flags));
}

/** BPF_MAP_DELETE_ELEM: returns false when the key was absent. @throws KernelError (EINVAL on arrays) */
export function mapDelete(fd: number, key: Buffer): boolean {
  const r = sysBpf(BpfCmd.MAP_DELETE_ELEM, elemAttr(fd, key, null, 0));
  if (r >= 0) return true;
  if (r === -Errno.ENOENT) return false;
  throw bpfError(BpfCmd.MAP_DELETE_ELEM, -r);
}

/**
 * BPF_MAP_GET_NEXT_KEY: writes the key after `key` (the first key when `key` is null) into `next`. Returns false at
 * the end of the map. @throws KernelError
 */
export function mapGetNextKey(fd: number, key: Buffer | null, next: Buffer): boolean {
  const r = sysBpf(BpfCmd.MAP_GET_NEXT_KEY, elemAttr(fd, key, next, 0));
  if (r >= 0) return true;
  if (r === -Errno.ENOENT) return false;
  throw bpfError(BpfCmd.MAP_GET_NEXT_KEY, -r);
}

/** BPF_MAP_LOOKUP_AND_DELETE_ELEM (also pops queues/stacks with `key` null). Returns false when absent/empty. */
export function mapLookupAndDelete(fd: number, key: Buffer | null, value: Buffer, flags = 0): boolean {
  const r = sysBpf(BpfCmd.MAP_LOOKUP_AND_DELETE_ELEM, elemAttr(fd, key, value, flags));
  if (r >= 0) return true;
  if (r === -Errno.ENOENT) return false;
  throw bpfError(BpfCmd.MAP_LOOKUP_AND_DELETE_ELEM, -r);
}

/** One MAP_LOOKUP_BATCH step's result: `count` elements were written; `done` when the map has no more. */
export interface BatchStep {
  count: number;
  done: boolean;
}

/**
 * One BPF_MAP_LOOKUP_BATCH (or LOOKUP_AND_DELETE_BATCH with `del`) step. `inBatch` null starts at the beginning;
 * the kernel writes its position into `outBatch` (>= key size bytes; pass it back as `inBatch`). `keys`/`values`
 * hold up to `max` elements. Returns the count written and whether the walk is finished (ENOENT, possibly with a
 * final non-empty batch). @throws KernelError (EINVAL/ENOTSUPP when the map type has no batch ops, ENOSPC when a
 * hash bucket holds more than `max` elements)
 */
export function mapLookupBatch(
  fd: number,
  inBatch: Buffer | null,
  outBatch: Buffer,
  keys: Buffer,
  values: Buffer,
  max: number,
  del = false,
): BatchStep {
  const a = attr();
  a.writeBigUInt64LE(ptr(inBatch), 0);
  a.writeBigUInt64LE(ptr(outBatch), 8);
  a.writeBigUInt64LE(ptr(keys), 16);
  a.writeBigUInt64LE(ptr(values), 24);
  a.writeUInt32LE(max, 32);
  a.writeUInt32LE(fd, 36);
  const cmd = del ? BpfCmd.MAP_LOOKUP_AND_DELETE_BATCH : BpfCmd.MAP_LOOKUP_BATCH;
  const r = sysBpf(cmd, a);
  const count = a.readUInt32LE(32);
  if (r >= 0) return { count, done: false };
  if (r === -Errno.ENOENT) return { count, done: true };
  throw bpfError(cmd, -r);
}

/** All elements of a map, keys and values packed back to back (`count` of each). */
export interface MapDump {
  count: number;
  /** `count * keySize` bytes. */
  keys: Buffer;
  /** `count * valueBytes` bytes (per-CPU maps: each value is all CPUs' slots). */
  values: Buffer;
  /** Whether the batch API was used (false: the get_next_key + lookup fallback). */
  batched: boolean;
}

/** errnos that mean "this map type has no batch operations". */
function batchUnsupported(e: unknown): boolean {
  return (
    e instanceof KernelError &&
    (e.errno === Errno.EINVAL || e.errno === Errno.ENOTSUPP || e.errno === Errno.EOPNOTSUPP || e.errno === Errno.ENOSYS)
  );
}

/**
 * Reads every element of a map: BPF_MAP_LOOKUP_BATCH in chunks of `chunk` elements when the map type supports it,
 * otherwise a get_next_key walk with one lookup per key (keys deleted during the walk are skipped). `valueBytes` is
 * the user-space value size (per-CPU: `roundup(value_size, 8) * possible CPUs`). `useBatch` false forces the walk.
 * @throws KernelError
 */
export function mapDump(
  fd: number,
  keySize: number,
  valueBytes: number,
  opts: { chunk?: number; useBatch?: boolean } = {},
): MapDump {
  if (opts.useBatch !== false) {
    try {
      return dumpBatch(fd, keySize, valueBytes, opts.chunk ?? 256);
    } catch (e) {
      if (!batchUnsupported(e)) throw e;
    }
  }
  return dumpWalk(fd, keySize, valueBytes);
}

function dumpBatch(fd: number, keySize: number, valueBytes: number, chunk: number): MapDump {
  const keyParts: Buffer[] = [];
  const valueParts: Buffer[] = [];
  let total = 0;
  let inBatch: Buffer | null = null;
  let outBatch: Buffer = Buffer.alloc(Math.max(keySize, 8));
  for (;;) {
    const keys = Buffer.alloc(chunk * keySize);
    const values = Buffer.alloc(chunk * valueBytes);
    let step: BatchStep;
    try {
      step = mapLookupBatch(fd, inBatch, outBatch, keys, values, chunk);
    } catch (e) {
      // A hash bucket larger than the chunk: retry the same position with a bigger chunk.
      if (e instanceof KernelError && e.errno === Errno.ENOSPC && chunk < 1 << 20) {
        chunk *= 4;
        continue;
      }
      throw e;
    }
    if (step.count > 0) {
      keyParts.push(keys.subarray(0, step.count * keySize));
      valueParts.push(values.subarray(0, step.count * valueBytes));
      total += step.count;
    }
    if (step.done) break;
    const next: Buffer = inBatch ?? Buffer.alloc(outBatch.length);
    inBatch = outBatch;
    outBatch = next;
  }
  return { count: total, keys: Buffer.concat(keyParts), values: Buffer.concat(valueParts), batched: true };
}

function dumpWalk(fd: number, keySize: number, valueBytes: number): MapDump {
  const keyParts: Buffer[] = [];
  const valueParts: Buffer[] = [];
  let prev: Buffer | null = null;
  for (;;) {
    const next = Buffer.alloc(keySize);
    if (!mapGetNextKey(fd, prev, next)) break;
    const value = Buffer.alloc(valueBytes);
    if (mapLookup(fd, next, value)) {
      keyParts.push(next);
      valueParts.push(value);
    }
    prev = next;
  }
  return {
    count: keyParts.length,
    keys: Buffer.concat(keyParts),
    values: Buffer.concat(valueParts),
    batched: false,
  };
}
