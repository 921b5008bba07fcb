/**
 * Reader for kernel BTF (`/sys/kernel/btf/vmlinux`). Format: the kernel's `Documentation/bpf/btf.rst` and
 * `include/uapi/linux/btf.h`:
 *
 * - header (24 bytes): magic 0xeB9F (u16), version (u8), flags (u8), hdr_len, type_off, type_len, str_off, str_len
 *   (u32 each; offsets relative to the end of the header);
 * - type records `{u32 name_off; u32 info; u32 size_or_type}` (info: vlen bits 0-15, kind bits 24-28, kind_flag bit
 *   31), each followed by kind-specific data; type ids count from 1 in file order, 0 is `void`;
 * - a string table of NUL-terminated names.
 *
 * Speed: vmlinux BTF has ~126k types. Loading reads the file and makes one tight pass over a Uint32Array to record
 * where each type starts and its name's string offset; the first lookups by name search the string table and then
 * those offsets (both native searches); the name index (an open-addressing hash of name bytes, no string decoding)
 * is built after {@link NAME_HASH_AFTER} distinct names; decoded names are cached. Everything is lazy and the vmlinux
 * instance is cached per process.
 *
 * Split BTF (kernel modules, `/sys/kernel/btf/<module>`) is not supported yet.
 */
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { BpfscopeError } from '../errors.js';
import { type BtfIndex, readVmlinuxIndex, writeVmlinuxIndex } from './btf-index-cache.js';
import { mmap, PROT_READ, view } from './ffi.js';

/** `MAP_PRIVATE` (include/uapi/asm-generic/mman-common.h). */
const MAP_PRIVATE = 2;

/**
 * `path` mapped read-only and private, as a Buffer over the mapping (never unmapped: the caller keeps it for the
 * process's life), or undefined when the file cannot be mapped. Since 6.16 the kernel lets /sys/kernel/btf/vmlinux be
 * mapped this way; reading it instead costs ~1,350 reads of 4 KiB (sysfs hands out a page per read): 13-21 ms of CPU
 * here against under 3 ms for the mapping and the first touch of every page.
 */
function mapReadOnly(path: string): Buffer | undefined {
  let fd = -1;
  try {
    fd = openSync(path, 'r');
    const size = fstatSync(fd).size;
    if (size <= 0) return undefined;
    const p = mmap(size, PROT_READ, MAP_PRIVATE, fd, 0);
    return typeof p === 'number' ? undefined : Buffer.from(view(p, size));
  } catch {
    return undefined;
  } finally {
    if (fd >= 0) closeSync(fd);
  }
}

/** BTF kinds (`BTF_KIND_*`). */
export const BtfKind = {
  UNKN: 0,
  INT: 1,
  PTR: 2,
  ARRAY: 3,
  STRUCT: 4,
  UNION: 5,
  ENUM: 6,
  FWD: 7,
  TYPEDEF: 8,
  VOLATILE: 9,
  CONST: 10,
  RESTRICT: 11,
  FUNC: 12,
  FUNC_PROTO: 13,
  VAR: 14,
  DATASEC: 15,
  FLOAT: 16,
  DECL_TAG: 17,
  TYPE_TAG: 18,
  ENUM64: 19,
} as const;

const KIND_NAMES = [
  'UNKN',
  'INT',
  'PTR',
  'ARRAY',
  'STRUCT',
  'UNION',
  'ENUM',
  'FWD',
  'TYPEDEF',
  'VOLATILE',
  'CONST',
  'RESTRICT',
  'FUNC',
  'FUNC_PROTO',
  'VAR',
  'DATASEC',
  'FLOAT',
  'DECL_TAG',
  'TYPE_TAG',
  'ENUM64',
];

/** `BTF_INT_SIGNED`, `BTF_INT_CHAR`, `BTF_INT_BOOL` bits of an INT's encoding. */
export const BTF_INT_SIGNED = 1;
export const BTF_INT_CHAR = 2;
export const BTF_INT_BOOL = 4;

/** Name of a BTF kind (`STRUCT`), as bpftool prints it. */
export function btfKindName(kind: number): string {
  return KIND_NAMES[kind] ?? `KIND${kind}`;
}

/** A struct/union member. Offsets are from the start of the outermost type asked about. */
export interface BtfMember {
  /** Member name; '' for an anonymous struct/union member (only when not flattened). */
  name: string;
  typeId: number;
  /** Offset in bits. */
  bitOffset: number;
  /** Bitfield width in bits, 0 for a normal member. */
  bitSize: number;
  /** Offset in bytes (bitOffset / 8, rounded down). */
  offset: number;
}

/** A function parameter (FUNC_PROTO entry). */
export interface BtfParam {
  /** '' when unnamed (prototypes behind typedefs usually have no names). */
  name: string;
  typeId: number;
}

/** A decoded FUNC_PROTO. */
export interface BtfFuncProto {
  returnTypeId: number;
  params: BtfParam[];
  /** The last entry was `...` (type 0, no name); it is not in `params`. */
  variadic: boolean;
}

/** An enum constant (ENUM: u32/s32 values, ENUM64: 64-bit), value sign-extended when the enum is signed. */
export interface BtfEnumValue {
  name: string;
  value: bigint;
}

/** What {@link Btf.resolve} skips. Default: all of them. */
export interface ResolveOptions {
  typedef?: boolean;
  /** const, volatile, restrict */
  qualifiers?: boolean;
  typeTag?: boolean;
}

/**
 * Words after a type's 3-word header, by kind: fixed ({@link FIXED_WORDS}: INT, VAR and DECL_TAG 1, ARRAY 3) and per
 * vlen entry ({@link WORDS_PER_VLEN}: STRUCT, UNION, DATASEC and ENUM64 3, ENUM and FUNC_PROTO 2), as btf.rst lays
 * them out. Kinds past ENUM64 (unknown to this reader) count 0, as before.
 */
const FIXED_WORDS = new Uint8Array(32);
const WORDS_PER_VLEN = new Uint8Array(32);
FIXED_WORDS[BtfKind.INT] = FIXED_WORDS[BtfKind.VAR] = FIXED_WORDS[BtfKind.DECL_TAG] = 1;
FIXED_WORDS[BtfKind.ARRAY] = 3;
WORDS_PER_VLEN[BtfKind.STRUCT] = WORDS_PER_VLEN[BtfKind.UNION] = 3;
WORDS_PER_VLEN[BtfKind.DATASEC] = WORDS_PER_VLEN[BtfKind.ENUM64] = 3;
WORDS_PER_VLEN[BtfKind.ENUM] = WORDS_PER_VLEN[BtfKind.FUNC_PROTO] = 2;

/** Distinct names looked up by string search before {@link Btf} builds the full name hash. */
const NAME_HASH_AFTER = 8;

/** Size of a pointer in the kernel (64-bit kernels only: x86-64, aarch64). */
const PTR_SIZE = 8;

function btfError(msg: string): BpfscopeError {
  return new BpfscopeError(`BTF: ${msg}`);
}

/** Set by {@link Btf.vmlinux} while it constructs the running kernel's BTF: use the per-boot index file. */
let indexingVmlinux = false;

/** The length in words of the type record starting at word `p` of `u32` (as {@link Btf} `indexTypes` steps). */
function typeWords(u32: Uint32Array): (p: number) => number {
  return (p) => {
    const info = u32[p + 1]!;
    const kind = (info >>> 24) & 0x1f;
    return 3 + FIXED_WORDS[kind]! + WORDS_PER_VLEN[kind]! * (info & 0xffff);
  };
}

/** Parsed BTF blob. Type ids are numbers; 0 is void. Methods throw BpfscopeError for ids out of range. */
export class Btf {
  /** Number of types (the largest id). */
  readonly count: number;
  private readonly u32: Uint32Array;
  private readonly strBase: number;
  private readonly strLen: number;
  private readonly bytes: Buffer;
  /** offs[id] = index into u32 of the type's first word. */
  private readonly offs: Uint32Array;
  /** nameOffs[id] = the string offset of the type's name (0: anonymous). */
  private readonly nameOffs: Uint32Array;
  private byName: { head: Int32Array; next: Int32Array; mask: number } | undefined;
  private uncachedLookups = 0;
  private readonly lookupCache = new Map<string, number[]>();
  private readonly names = new Map<number, string>();

  /**
   * Parses a BTF blob (the whole file). @throws BpfscopeError for a bad magic, version or truncated sections.
   */
  constructor(data: Buffer) {
    // Word access needs 4-byte alignment of the type section: copy to a fresh ArrayBuffer if needed.
    if (data.byteOffset % 4 !== 0) data = Buffer.from(data);
    this.bytes = data;
    if (data.length < 24) throw btfError('file too short');
    const magic = data.readUInt16LE(0);
    if (magic !== 0xeb9f) throw btfError(`bad magic 0x${magic.toString(16)} (big-endian BTF is not supported)`);
    if (data[2] !== 1) throw btfError(`unsupported version ${data[2]}`);
    const hdrLen = data.readUInt32LE(4);
    const typeOff = data.readUInt32LE(8);
    const typeLen = data.readUInt32LE(12);
    const strOff = data.readUInt32LE(16);
    const strLen = data.readUInt32LE(20);
    const typeStart = hdrLen + typeOff;
    if (typeStart % 4 !== 0 || typeLen % 4 !== 0) throw btfError('misaligned type section');
    if (typeStart + typeLen > data.length || hdrLen + strOff + strLen > data.length) throw btfError('truncated');
    this.strBase = hdrLen + strOff;
    this.strLen = strLen;
    this.u32 = new Uint32Array(data.buffer, data.byteOffset, Math.floor(data.length / 4));
    const start = typeStart >>> 2;
    const end = (typeStart + typeLen) >>> 2;
    let index = indexingVmlinux ? readVmlinuxIndex(this.u32, data.length, start, end, typeWords(this.u32)) : null;
    if (!index) {
      index = Btf.indexTypes(this.u32, start, end);
      if (indexingVmlinux) writeVmlinuxIndex(this.u32, data.length, index);
    }
    this.offs = index.offs;
    this.nameOffs = index.nameOffs;
    this.count = this.offs.length - 1;
  }

  /**
   * One pass over the type section: the word index where each type starts and its name's string offset (index 0
   * unused in both). Table-driven (a type's length is 3 words, plus {@link FIXED_WORDS} and {@link WORDS_PER_VLEN}
   * times its vlen), with arrays sized for the most types the section can hold (every type has at least 3 words):
   * this pass runs at every start of a tool that reads BTF, mostly before V8 has optimized it.
   */
  private static indexTypes(u32: Uint32Array, start: number, end: number): BtfIndex {
    const most = Math.floor((end - start) / 3) + 1;
    const offs = new Uint32Array(most);
    const nameOffs = new Uint32Array(most);
    let id = 1;
    let p = start;
    while (p < end) {
      offs[id] = p;
      nameOffs[id++] = u32[p]!;
      const info = u32[p + 1]!;
      const kind = (info >>> 24) & 0x1f;
      p += 3 + FIXED_WORDS[kind]! + WORDS_PER_VLEN[kind]! * (info & 0xffff);
    }
    if (p !== end) throw btfError('type section does not end on a type boundary');
    return { offs: offs.subarray(0, id), nameOffs: nameOffs.subarray(0, id) };
  }

  private static cached: Btf | undefined;
  private static loadMs = 0;

  /**
   * The running kernel's BTF (`/sys/kernel/btf/vmlinux`), mapped (or, where the kernel does not allow that, read)
   * and indexed on first use and cached.
   * @throws BpfscopeError when the kernel has no BTF (CONFIG_DEBUG_INFO_BTF off) or it cannot be read.
   */
  static vmlinux(path = '/sys/kernel/btf/vmlinux'): Btf {
    if (Btf.cached) return Btf.cached;
    const t0 = process.hrtime.bigint(); // not performance.now(): its first use loads perf_hooks
    let data: Buffer | undefined = mapReadOnly(path);
    try {
      data ??= readFileSync(path);
    } catch (e) {
      throw new BpfscopeError(`cannot read kernel BTF ${path}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`, {
        hint: 'bpfscope needs a kernel built with CONFIG_DEBUG_INFO_BTF=y',
        cause: e,
      });
    }
    // The default path only: the per-boot index file (kernel/btf-index-cache.ts) is keyed on this boot's BTF.
    indexingVmlinux = path === '/sys/kernel/btf/vmlinux';
    try {
      Btf.cached = new Btf(data);
    } finally {
      indexingVmlinux = false;
    }
    Btf.loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
    return Btf.cached;
  }

  /** Milliseconds the cached vmlinux BTF took to read and index (0 before the first load). */
  static vmlinuxLoadMs(): number {
    return Btf.loadMs;
  }

  private off(id: number): number {
    if (!(id >= 1 && id <= this.count)) throw btfError(`type id ${id} out of range 1..${this.count}`);
    return this.offs[id]!;
  }

  /** Kind of type `id` (`BtfKind`); 0 (UNKN) for void. */
  kind(id: number): number {
    if (id === 0) return 0;
    return (this.u32[this.off(id) + 1]! >>> 24) & 0x1f;
  }

  private vlen(id: number): number {
    return this.u32[this.off(id) + 1]! & 0xffff;
  }

  private kindFlag(id: number): boolean {
    return this.u32[this.off(id) + 1]! >>> 31 === 1;
  }

  /** The `size` field (INT, STRUCT, UNION, ENUM, ENUM64, FLOAT, DATASEC) or the referenced `type` (others). */
  private sizeOrType(id: number): number {
    return this.u32[this.off(id) + 2]!;
  }

  /** String at offset `off` of the string table (cached). */
  str(off: number): string {
    if (off === 0) return '';
    const cached = this.names.get(off);
    if (cached !== undefined) return cached;
    if (off >= this.strLen) throw btfError(`string offset ${off} out of range`);
    const start = this.strBase + off;
    const end = this.bytes.indexOf(0, start);
    const s = this.bytes.toString('latin1', start, end < 0 ? this.strBase + this.strLen : end);
    this.names.set(off, s);
    return s;
  }

  /** Name of type `id` ('' when anonymous, 'void' for 0). */
  name(id: number): string {
    if (id === 0) return 'void';
    return this.str(this.u32[this.off(id)]!);
  }

  /** FNV-1a over the NUL-terminated string at byte `pos`. */
  private hashAt(pos: number): number {
    const b = this.bytes;
    let h = 0x811c9dc5;
    for (let c = b[pos]!; c !== 0; c = b[++pos]!) h = Math.imul(h ^ c, 0x01000193);
    return h >>> 0;
  }

  private static hashBytes(q: Uint8Array): number {
    let h = 0x811c9dc5;
    for (let i = 0; i < q.length; i++) h = Math.imul(h ^ q[i]!, 0x01000193);
    return h >>> 0;
  }

  /**
   * Builds a type index over `key(nameOff)` (a hash of the name bytes), chaining ids per bucket in ascending order:
   * one pass over the types that reads every name (about 10-15 ms for vmlinux: random access into the strings).
   */
  private buildIndex(key: (nameOff: number) => number): { head: Int32Array; next: Int32Array; mask: number } {
    let size = 1;
    while (size < this.count * 2) size <<= 1;
    const head = new Int32Array(size);
    const next = new Int32Array(this.count + 1);
    const mask = size - 1;
    const nameOffs = this.nameOffs;
    for (let id = this.count; id >= 1; id--) {
      const nameOff = nameOffs[id]!;
      if (nameOff === 0) continue;
      const h = key(nameOff) & mask;
      next[id] = head[h]!;
      head[h] = id;
    }
    return { head, next, mask };
  }

  private nameEquals(id: number, q: Uint8Array): boolean {
    const pos = this.strBase + this.nameOffs[id]!;
    const b = this.bytes;
    for (let i = 0; i < q.length; i++) if (b[pos + i] !== q[i]) return false;
    return b[pos + q.length] === 0;
  }

  /** String-table offsets holding exactly `q` (a native substring search for `\0name\0`, about 1 ms). */
  private stringOffsets(q: Buffer): number[] {
    const table = this.bytes.subarray(this.strBase, this.strBase + this.strLen);
    const needle = Buffer.concat([Buffer.of(0), q, Buffer.of(0)]);
    const out: number[] = [];
    for (let i = table.indexOf(needle); i >= 0; i = table.indexOf(needle, i + 1)) out.push(i + 1);
    return out;
  }

  /** All type ids named `name`, any kind, ascending (cached per name). */
  private idsNamed(name: string): number[] {
    const hit = this.lookupCache.get(name);
    if (hit) return hit;
    const q = Buffer.from(name, 'latin1');
    const out: number[] = [];
    if (++this.uncachedLookups > NAME_HASH_AFTER && !this.byName) {
      this.byName = this.buildIndex((off) => this.hashAt(this.strBase + off));
    }
    if (this.byName) {
      const { head, next, mask } = this.byName;
      for (let id = head[Btf.hashBytes(q) & mask]!; id !== 0; id = next[id]!) if (this.nameEquals(id, q)) out.push(id);
    } else {
      // Usually one offset: vmlinux strings are deduplicated. The types naming it: a native search of nameOffs.
      const offsets = this.stringOffsets(q);
      const nameOffs = this.nameOffs;
      for (const off of offsets) {
        for (let id = nameOffs.indexOf(off, 1); id > 0; id = nameOffs.indexOf(off, id + 1)) out.push(id);
      }
      if (offsets.length > 1) out.sort((a, b) => a - b);
    }
    this.lookupCache.set(name, out);
    return out;
  }

  /**
   * All type ids named `name` (ascending), optionally only of `kind`. The first lookups search the string table
   * for the name and then the types' name offsets for its offset (both native searches), 1-2 ms each and cached;
   * after {@link NAME_HASH_AFTER} distinct names a full name hash is built instead, for bulk users such as listings.
   */
  findTypes(name: string, kind?: number): number[] {
    if (name === '') return [];
    const ids = this.idsNamed(name);
    return kind === undefined ? [...ids] : ids.filter((id) => this.kind(id) === kind);
  }

  /**
   * The first type id named `name` (of `kind` when given), or undefined. Without a kind, a complete definition is
   * preferred over a FWD declaration.
   */
  findType(name: string, kind?: number): number | undefined {
    const ids = this.findTypes(name, kind);
    if (kind !== undefined || ids.length <= 1) return ids[0];
    return ids.find((id) => this.kind(id) !== BtfKind.FWD) ?? ids[0];
  }

  /** Id of TYPEDEF `name` (e.g. `btf_trace_sched_switch`, the attach_btf_id of a tp_btf program), or undefined. */
  typedefId(name: string): number | undefined {
    return this.findType(name, BtfKind.TYPEDEF);
  }

  /**
   * Follows typedefs, const/volatile/restrict and type tags (each skippable, see {@link ResolveOptions}) to the
   * underlying type id.
   */
  resolve(id: number, opts: ResolveOptions = {}): number {
    const skipTypedef = opts.typedef ?? true;
    const skipQual = opts.qualifiers ?? true;
    const skipTag = opts.typeTag ?? true;
    for (let guard = 0; guard < 64 && id !== 0; guard++) {
      const k = this.kind(id);
      if (
        (k === BtfKind.TYPEDEF && skipTypedef) ||
        ((k === BtfKind.CONST || k === BtfKind.VOLATILE || k === BtfKind.RESTRICT) && skipQual) ||
        (k === BtfKind.TYPE_TAG && skipTag)
      ) {
        id = this.sizeOrType(id);
        continue;
      }
      return id;
    }
    return id;
  }

  /** The type a PTR, TYPEDEF, qualifier, TYPE_TAG, FUNC, VAR or DECL_TAG refers to. */
  refType(id: number): number {
    const k = this.kind(id);
    if (
      k === BtfKind.PTR ||
      k === BtfKind.TYPEDEF ||
      k === BtfKind.CONST ||
      k === BtfKind.VOLATILE ||
      k === BtfKind.RESTRICT ||
      k === BtfKind.TYPE_TAG ||
      k === BtfKind.FUNC ||
      k === BtfKind.VAR ||
      k === BtfKind.DECL_TAG
    ) {
      return this.sizeOrType(id);
    }
    throw btfError(`type ${id} (${btfKindName(k)}) refers to no type`);
  }

  /** INT details: byte size, bit offset, bit count, and the signed/char/bool flags. */
  intInfo(id: number): {
    size: number;
    bits: number;
    bitOffset: number;
    signed: boolean;
    char: boolean;
    bool: boolean;
  } {
    if (this.kind(id) !== BtfKind.INT) throw btfError(`type ${id} is not an INT`);
    const o = this.off(id);
    const v = this.u32[o + 3]!;
    const enc = (v >>> 24) & 0x0f;
    return {
      size: this.u32[o + 2]!,
      bits: v & 0xff,
      bitOffset: (v >>> 16) & 0xff,
      signed: (enc & BTF_INT_SIGNED) !== 0,
      char: (enc & BTF_INT_CHAR) !== 0,
      bool: (enc & BTF_INT_BOOL) !== 0,
    };
  }

  /** ARRAY details: element type, index type, element count. */
  arrayInfo(id: number): { elemTypeId: number; indexTypeId: number; nelems: number } {
    if (this.kind(id) !== BtfKind.ARRAY) throw btfError(`type ${id} is not an ARRAY`);
    const o = this.off(id);
    return { elemTypeId: this.u32[o + 3]!, indexTypeId: this.u32[o + 4]!, nelems: this.u32[o + 5]! };
  }

  /** Size in bytes of type `id` (pointers 8, arrays elem*n, qualifiers/typedefs resolved; 0 for void/func/fwd). */
  sizeOf(id: number): number {
    for (let guard = 0; guard < 64; guard++) {
      if (id === 0) return 0;
      const k = this.kind(id);
      switch (k) {
        case BtfKind.INT:
        case BtfKind.STRUCT:
        case BtfKind.UNION:
        case BtfKind.ENUM:
        case BtfKind.ENUM64:
        case BtfKind.FLOAT:
        case BtfKind.DATASEC:
          return this.sizeOrType(id);
        case BtfKind.PTR:
          return PTR_SIZE;
        case BtfKind.ARRAY: {
          const a = this.arrayInfo(id);
          return a.nelems * this.sizeOf(a.elemTypeId);
        }
        case BtfKind.TYPEDEF:
        case BtfKind.CONST:
        case BtfKind.VOLATILE:
        case BtfKind.RESTRICT:
        case BtfKind.TYPE_TAG:
        case BtfKind.VAR:
          id = this.sizeOrType(id);
          continue;
        default:
          return 0;
      }
    }
    throw btfError(`type chain too deep at ${id}`);
  }

  /**
   * Members of STRUCT/UNION `id` (resolving typedefs/qualifiers to reach it). With `flatten` (default true), members
   * of anonymous struct/union members are listed in their place with offsets added, as C lets you name them.
   */
  members(id: number, opts: { flatten?: boolean } = {}): BtfMember[] {
    const flatten = opts.flatten ?? true;
    const out: BtfMember[] = [];
    this.collectMembers(this.resolve(id), 0, flatten, out, 0);
    return out;
  }

  private collectMembers(id: number, base: number, flatten: boolean, out: BtfMember[], depth: number): void {
    const k = this.kind(id);
    if (k !== BtfKind.STRUCT && k !== BtfKind.UNION) {
      throw btfError(`type ${id} (${this.name(id) || btfKindName(k)}) is not a struct or union`);
    }
    if (depth > 32) throw btfError('anonymous members nested too deep');
    const o = this.off(id) + 3;
    const n = this.vlen(id);
    const kflag = this.kindFlag(id);
    for (let i = 0; i < n; i++) {
      const nameOff = this.u32[o + 3 * i]!;
      const typeId = this.u32[o + 3 * i + 1]!;
      const raw = this.u32[o + 3 * i + 2]!;
      const bitOffset = base + (kflag ? raw & 0xffffff : raw);
      const bitSize = kflag ? raw >>> 24 : 0;
      if (nameOff === 0 && flatten) {
        const inner = this.resolve(typeId);
        const ik = this.kind(inner);
        if (ik === BtfKind.STRUCT || ik === BtfKind.UNION) {
          this.collectMembers(inner, bitOffset, flatten, out, depth + 1);
          continue;
        }
      }
      out.push({ name: this.str(nameOff), typeId, bitOffset, bitSize, offset: Math.floor(bitOffset / 8) });
    }
  }

  /** Member `name` of STRUCT/UNION `id` (searching anonymous members), or undefined. */
  member(id: number, name: string): BtfMember | undefined {
    return this.members(id).find((m) => m.name === name);
  }

  /** Constants of ENUM/ENUM64 `id` (resolving typedefs/qualifiers). */
  enumValues(id: number): BtfEnumValue[] {
    id = this.resolve(id);
    const k = this.kind(id);
    const o = this.off(id) + 3;
    const n = this.vlen(id);
    const signed = this.kindFlag(id);
    const out: BtfEnumValue[] = [];
    if (k === BtfKind.ENUM) {
      for (let i = 0; i < n; i++) {
        const v = this.u32[o + 2 * i + 1]!;
        out.push({ name: this.str(this.u32[o + 2 * i]!), value: signed ? BigInt(v | 0) : BigInt(v) });
      }
    } else if (k === BtfKind.ENUM64) {
      for (let i = 0; i < n; i++) {
        const lo = BigInt(this.u32[o + 3 * i + 1]!);
        const hi = BigInt(this.u32[o + 3 * i + 2]!);
        const v = (hi << 32n) | lo;
        out.push({ name: this.str(this.u32[o + 3 * i]!), value: signed ? BigInt.asIntN(64, v) : v });
      }
    } else {
      throw btfError(`type ${id} (${btfKindName(k)}) is not an enum`);
    }
    return out;
  }

  /**
   * The enumerator `name` of any ENUM/ENUM64 type (`TCP_ESTABLISHED`), with its value and enum type id, or
   * undefined. The first lookup indexes every enumerator once.
   */
  enumerator(name: string): (BtfEnumValue & { enumId: number }) | undefined {
    if (!this.enumerators) {
      const index = new Map<string, BtfEnumValue & { enumId: number }>();
      for (let id = 1; id <= this.count; id++) {
        const k = this.kind(id);
        if (k !== BtfKind.ENUM && k !== BtfKind.ENUM64) continue;
        for (const v of this.enumValues(id)) if (!index.has(v.name)) index.set(v.name, { ...v, enumId: id });
      }
      this.enumerators = index;
    }
    return this.enumerators.get(name);
  }

  private enumerators: Map<string, BtfEnumValue & { enumId: number }> | undefined;

  /** Decodes FUNC_PROTO `id`, or the prototype of FUNC `id`, or of a pointer/typedef to one. */
  funcProto(id: number): BtfFuncProto {
    id = this.resolve(id);
    if (this.kind(id) === BtfKind.FUNC) id = this.sizeOrType(id);
    if (this.kind(id) === BtfKind.PTR) id = this.resolve(this.sizeOrType(id));
    if (this.kind(id) !== BtfKind.FUNC_PROTO) throw btfError(`type ${id} is not a function prototype`);
    const o = this.off(id);
    const n = this.vlen(id);
    const params: BtfParam[] = [];
    let variadic = false;
    for (let i = 0; i < n; i++) {
      const nameOff = this.u32[o + 3 + 2 * i]!;
      const typeId = this.u32[o + 4 + 2 * i]!;
      if (i === n - 1 && nameOff === 0 && typeId === 0) {
        variadic = true;
        break;
      }
      params.push({ name: this.str(nameOff), typeId });
    }
    return { returnTypeId: this.u32[o + 2]!, params, variadic };
  }

  /**
   * Arguments of tracepoint `tp` as a tp_btf/raw_tp program sees them (ctx is u64[] of these), without the leading
   * `void *__data`. Names come from FUNC `__probestub_<tp>` (or `__traceiter_<tp>`); when neither exists, types come
   * from TYPEDEF `btf_trace_<tp>` with names arg0, arg1, ... Returns undefined when BTF does not know `tp`.
   */
  btfTraceArgs(tp: string): BtfParam[] | undefined {
    for (const prefix of ['__probestub_', '__traceiter_']) {
      const f = this.findType(prefix + tp, BtfKind.FUNC);
      if (f !== undefined) return this.funcProto(f).params.slice(1);
    }
    const td = this.typedefId(`btf_trace_${tp}`);
    if (td === undefined) return undefined;
    return this.funcProto(td)
      .params.slice(1)
      .map((p, i) => ({ name: p.name || `arg${i}`, typeId: p.typeId }));
  }

  /** C spelling of a type: `struct task_struct *`, `unsigned int`, `char[16]`, `void (*)(int)`. */
  typeName(id: number): string {
    return this.render(id, '', 0);
  }

  /** C declaration of `name` with type `id`: `char comm[16]`, `struct list_head *next`, `void (*fn)(int)`. */
  declaration(id: number, name: string): string {
    return this.render(id, name, 0);
  }

  private render(id: number, suffix: string, depth: number): string {
    if (depth > 32) return '?';
    const sp = suffix && !suffix.startsWith('[') ? ` ${suffix}` : suffix;
    // `void *`, with the space C style (and bpftrace's listings) put before the stars, as for other pointees
    if (id === 0) return `void${sp}`;
    const k = this.kind(id);
    const nm = this.name(id);
    switch (k) {
      case BtfKind.INT:
      case BtfKind.FLOAT:
      case BtfKind.TYPEDEF:
        return `${nm}${sp}`;
      case BtfKind.STRUCT:
      case BtfKind.UNION:
      case BtfKind.ENUM:
      case BtfKind.ENUM64: {
        const tag = k === BtfKind.STRUCT ? 'struct' : k === BtfKind.UNION ? 'union' : 'enum';
        return `${tag} ${nm || '(anon)'}${sp}`;
      }
      case BtfKind.FWD:
        return `${this.kindFlag(id) ? 'union' : 'struct'} ${nm}${sp}`;
      case BtfKind.PTR: {
        const target = this.sizeOrType(id);
        const tk = this.kind(target);
        if (tk === BtfKind.FUNC_PROTO) return this.render(target, `(*${suffix})`, depth + 1);
        if (tk === BtfKind.ARRAY) return this.render(target, `(*${suffix})`, depth + 1);
        return this.render(target, `*${suffix}`, depth + 1);
      }
      case BtfKind.CONST:
      case BtfKind.VOLATILE:
      case BtfKind.RESTRICT: {
        const q = k === BtfKind.CONST ? 'const' : k === BtfKind.VOLATILE ? 'volatile' : 'restrict';
        const target = this.sizeOrType(id);
        if (this.kind(target) === BtfKind.PTR) return this.render(target, `${q}${sp}`.trimEnd(), depth + 1);
        return `${q} ${this.render(target, suffix, depth + 1)}`;
      }
      case BtfKind.TYPE_TAG:
        return this.render(this.sizeOrType(id), suffix, depth + 1);
      case BtfKind.ARRAY: {
        const a = this.arrayInfo(id);
        return this.render(a.elemTypeId, `${suffix}[${a.nelems}]`, depth + 1);
      }
      case BtfKind.FUNC_PROTO: {
        const p = this.funcProto(id);
        const args = p.params.map((x) => this.render(x.typeId, '', depth + 1));
        if (p.variadic) args.push('...');
        return this.render(p.returnTypeId, `${suffix}(${args.join(', ') || 'void'})`, depth + 1);
      }
      case BtfKind.FUNC:
        return this.render(this.sizeOrType(id), nm, depth + 1);
      default:
        return `${btfKindName(k)} ${nm}`.trim();
    }
  }
}
