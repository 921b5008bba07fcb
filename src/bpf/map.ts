/**
 * BPF maps as objects owning their file descriptor. Keys and values are raw Buffers in the kernel's layout; typed
 * decoding belongs to the runtime. Per-CPU maps (PERCPU_HASH, PERCPU_ARRAY, LRU_PERCPU_HASH) exchange
 * `roundup(value_size, 8) * possible CPUs` bytes with user space: one 8-byte-aligned slot per possible CPU
 * (`kernel/bpf/syscall.c` `bpf_map_value_size`).
 */
import { BpfscopeError } from '../errors.js';
import {
  BPF_ANY,
  type MapDump,
  type MapInfo,
  type MapCreateAttr,
  mapCreate,
  mapCreateAsync,
  mapDelete,
  mapDump,
  mapGetNextKey,
  mapInfo,
  mapLookup,
  mapLookupAndDelete,
  mapUpdate,
} from '../kernel/bpf.js';
import { numPossibleCpus } from '../kernel/cpus.js';
import { close as closeFd } from '../kernel/ffi.js';

/** Map types (`enum bpf_map_type`, include/uapi/linux/bpf.h). */
export const MapType = {
  UNSPEC: 0,
  HASH: 1,
  ARRAY: 2,
  PROG_ARRAY: 3,
  PERF_EVENT_ARRAY: 4,
  PERCPU_HASH: 5,
  PERCPU_ARRAY: 6,
  STACK_TRACE: 7,
  CGROUP_ARRAY: 8,
  LRU_HASH: 9,
  LRU_PERCPU_HASH: 10,
  LPM_TRIE: 11,
  ARRAY_OF_MAPS: 12,
  HASH_OF_MAPS: 13,
  QUEUE: 22,
  STACK: 23,
  RINGBUF: 27,
  TASK_STORAGE: 29,
  BLOOM_FILTER: 30,
  USER_RINGBUF: 31,
} as const;

/** Map creation flags (`BPF_F_*` for MAP_CREATE). */
export const MapFlags = {
  NO_PREALLOC: 1 << 0,
  NO_COMMON_LRU: 1 << 1,
  NUMA_NODE: 1 << 2,
  RDONLY: 1 << 3,
  WRONLY: 1 << 4,
  STACK_BUILD_ID: 1 << 5,
  ZERO_SEED: 1 << 6,
  RDONLY_PROG: 1 << 7,
  WRONLY_PROG: 1 << 8,
  MMAPABLE: 1 << 10,
} as const;

/** Update flags: BPF_ANY (create or replace), BPF_NOEXIST (create only), BPF_EXIST (replace only). */
export { BPF_ANY, BPF_EXIST, BPF_NOEXIST } from '../kernel/bpf.js';

const PERCPU_TYPES: ReadonlySet<number> = new Set([
  MapType.PERCPU_HASH,
  MapType.PERCPU_ARRAY,
  MapType.LRU_PERCPU_HASH,
  21 /* PERCPU_CGROUP_STORAGE */,
]);
const ARRAY_TYPES: ReadonlySet<number> = new Set([MapType.ARRAY, MapType.PERCPU_ARRAY]);

/** Whether values of this map type hold one slot per possible CPU in user space. */
export function isPerCpuMapType(type: number): boolean {
  return PERCPU_TYPES.has(type);
}

/** Parameters of {@link BpfMap.create}. Sizes in bytes. */
export interface MapSpec {
  type: number;
  keySize: number;
  valueSize: number;
  maxEntries: number;
  flags?: number;
  /** Shown by `bpftool map show`; sanitised to `[A-Za-z0-9_.]` and cut to 15 bytes. */
  name: string;
  mapExtra?: bigint;
  innerMapFd?: number;
}

function createAttr(spec: MapSpec): MapCreateAttr {
  return {
    mapType: spec.type,
    keySize: spec.keySize,
    valueSize: spec.valueSize,
    maxEntries: spec.maxEntries,
    name: spec.name,
    ...(spec.flags !== undefined ? { flags: spec.flags } : {}),
    ...(spec.mapExtra !== undefined ? { mapExtra: spec.mapExtra } : {}),
    ...(spec.innerMapFd !== undefined ? { innerMapFd: spec.innerMapFd } : {}),
  };
}

/** A BPF map owning its fd. Methods throw {@link KernelError}/{@link BpfscopeError}; a closed map throws on use. */
export class BpfMap {
  /** Bytes of one value as user space reads/writes it (per-CPU: all slots). */
  readonly valueBytes: number;
  /** Bytes of one per-CPU slot (`roundup(valueSize, 8)`); equals valueSize for other maps. */
  readonly slotSize: number;
  /** Number of per-CPU slots (possible CPUs), 1 for other maps. */
  readonly nSlots: number;
  private _fd: number;

  private constructor(
    fd: number,
    readonly type: number,
    readonly keySize: number,
    readonly valueSize: number,
    readonly maxEntries: number,
    readonly name: string,
  ) {
    this._fd = fd;
    const perCpu = isPerCpuMapType(type);
    this.slotSize = perCpu ? (valueSize + 7) & ~7 : valueSize;
    this.nSlots = perCpu ? numPossibleCpus() : 1;
    this.valueBytes = this.slotSize * this.nSlots;
  }

  /** BPF_MAP_CREATE. @throws KernelError (e.g. EINVAL for a bad size, the root sentence without privileges) */
  static create(spec: MapSpec): BpfMap {
    const fd = mapCreate(createAttr(spec));
    return new BpfMap(fd, spec.type, spec.keySize, spec.valueSize, spec.maxEntries, spec.name);
  }

  /**
   * BPF_MAP_CREATE on a worker thread (kernel/bpf.ts mapCreateAsync): for maps whose preallocation takes the kernel
   * long (hash maps of thousands of entries), so that the caller's other start-up work runs meanwhile.
   * Rejects with the KernelError {@link create} throws.
   */
  static async createAsync(spec: MapSpec): Promise<BpfMap> {
    const fd = await mapCreateAsync(createAttr(spec));
    return new BpfMap(fd, spec.type, spec.keySize, spec.valueSize, spec.maxEntries, spec.name);
  }

  /** The map's file descriptor (what `ld_imm64` with BPF_PSEUDO_MAP_FD references). @throws if closed */
  get fd(): number {
    if (this._fd < 0) throw new BpfscopeError(`internal error: map '${this.name}' used after close()`);
    return this._fd;
  }

  /** Whether values hold one slot per possible CPU. */
  get perCpu(): boolean {
    return this.nSlots > 1 || isPerCpuMapType(this.type);
  }

  get closed(): boolean {
    return this._fd < 0;
  }

  private checkKey(key: Buffer | null): void {
    if (key && key.length !== this.keySize) {
      throw new BpfscopeError(
        `internal error: map '${this.name}' key is ${key.length} bytes, expected ${this.keySize}`,
      );
    }
  }

  private checkValue(value: Buffer): void {
    if (value.length !== this.valueBytes) {
      throw new BpfscopeError(
        `internal error: map '${this.name}' value is ${value.length} bytes, expected ${this.valueBytes}`,
      );
    }
  }

  /** The value of `key` (per-CPU maps: all slots, see {@link perCpuValues}), or undefined when absent. */
  lookup(key: Buffer): Buffer | undefined {
    this.checkKey(key);
    const value = Buffer.alloc(this.valueBytes);
    return mapLookup(this.fd, key, value) ? value : undefined;
  }

  /** Per-CPU maps: the value of `key` as one `valueSize`-byte slice per possible CPU; undefined when absent. */
  lookupPerCpu(key: Buffer): Buffer[] | undefined {
    const v = this.lookup(key);
    return v ? this.perCpuValues(v) : undefined;
  }

  /** Splits a user-space value into its per-CPU slots (each `valueSize` bytes, views into `value`). */
  perCpuValues(value: Buffer): Buffer[] {
    const out: Buffer[] = [];
    for (let i = 0; i < this.nSlots; i++) {
      out.push(value.subarray(i * this.slotSize, i * this.slotSize + this.valueSize));
    }
    return out;
  }

  /**
   * Creates or replaces `key` (`flags`: BPF_ANY, BPF_NOEXIST, BPF_EXIST). `value` must be {@link valueBytes} long
   * (per-CPU: every CPU's slot). @throws KernelError (EEXIST, ENOENT, E2BIG when the map is full)
   */
  update(key: Buffer, value: Buffer, flags = BPF_ANY): void {
    this.checkKey(key);
    this.checkValue(value);
    mapUpdate(this.fd, key, value, flags);
  }

  /** Deletes `key`; false when it was absent. @throws KernelError (EINVAL on array maps) */
  delete(key: Buffer): boolean {
    this.checkKey(key);
    return mapDelete(this.fd, key);
  }

  /** Looks up and deletes `key` atomically (hash maps; queues/stacks with `key` null). Undefined when absent. */
  lookupAndDelete(key: Buffer | null): Buffer | undefined {
    this.checkKey(key);
    const value = Buffer.alloc(this.valueBytes);
    return mapLookupAndDelete(this.fd, key, value) ? value : undefined;
  }

  /**
   * Iterates the keys with BPF_MAP_GET_NEXT_KEY (fresh Buffers). If the current key is deleted meanwhile, hash maps
   * restart from the first key, so keys may repeat when the map changes during the walk.
   */
  *keys(): IterableIterator<Buffer> {
    let prev: Buffer | null = null;
    for (;;) {
      const next = Buffer.alloc(this.keySize);
      if (!mapGetNextKey(this.fd, prev, next)) return;
      yield next;
      prev = next;
    }
  }

  /** All elements, keys and values packed ({@link mapDump}); batch lookup when the map type supports it. */
  dump(opts: { useBatch?: boolean; chunk?: number } = {}): MapDump {
    return mapDump(this.fd, this.keySize, this.valueBytes, opts);
  }

  /**
   * All `[key, value]` pairs (views into two packed Buffers; per-CPU values hold all slots). Uses
   * BPF_MAP_LOOKUP_BATCH when available, else a get_next_key walk (`useBatch: false` forces the walk).
   */
  entries(opts: { useBatch?: boolean; chunk?: number } = {}): Array<[Buffer, Buffer]> {
    const d = this.dump(opts);
    const out: Array<[Buffer, Buffer]> = [];
    for (let i = 0; i < d.count; i++) {
      out.push([
        d.keys.subarray(i * this.keySize, (i + 1) * this.keySize),
        d.values.subarray(i * this.valueBytes, (i + 1) * this.valueBytes),
      ]);
    }
    return out;
  }

  /**
   * Empties the map: hash-like maps delete every key; arrays (whose elements cannot be deleted) get every element
   * set to zero. @throws KernelError
   */
  clear(): void {
    if (ARRAY_TYPES.has(this.type)) {
      const key = Buffer.alloc(4);
      const zero = Buffer.alloc(this.valueBytes);
      for (let i = 0; i < this.maxEntries; i++) {
        key.writeUInt32LE(i, 0);
        mapUpdate(this.fd, key, zero, BPF_ANY);
      }
      return;
    }
    // Collect first: deleting the current key makes get_next_key restart.
    const keys = [...this.keys()];
    for (const k of keys) mapDelete(this.fd, k);
  }

  /** BPF_OBJ_GET_INFO_BY_FD: the kernel's view (id, type, sizes, name). */
  info(): MapInfo {
    return mapInfo(this.fd);
  }

  /** Closes the fd (the kernel frees the map when no program holds it). Idempotent. */
  close(): void {
    if (this._fd >= 0) {
      closeFd(this._fd);
      this._fd = -1;
    }
  }
}

/** Sums the u64 (little-endian) per-CPU slots of a per-CPU value: count/sum aggregations. */
export function sumPerCpuU64(slices: Buffer[]): bigint {
  let s = 0n;
  for (const b of slices) s += b.readBigUInt64LE(0);
  return BigInt.asUintN(64, s);
}

/** Sums signed s64 per-CPU slots (signed sums). */
export function sumPerCpuS64(slices: Buffer[]): bigint {
  let s = 0n;
  for (const b of slices) s += b.readBigInt64LE(0);
  return BigInt.asIntN(64, s);
}
