/**
 * The language's type system: the "sized types" every expression, map key and map value gets after semantic
 * analysis. Names and sizes follow bpftrace (`src/types.h` SizedType): integers are 1/2/4/8 bytes, signed or not;
 * strings are fixed-size NUL-padded buffers (`max_strlen`, default 64 bytes); aggregations are map-value-only types.
 */

/** Integer width in bytes. */
export type IntSize = 1 | 2 | 4 | 8;

/**
 * Which memory an address points into, hence which helper reads it: bpf_probe_read_user(_str) for `user`,
 * bpf_probe_read_kernel(_str) for `kernel` (bpftrace's AddrSpace).
 */
export type AddrSpace = 'kernel' | 'user';

export type SType =
  | { kind: 'none' } // statement-only expressions (printf, delete, ...) and unset
  /** With `enum`: a value of a named C enum type, printed as its enumerator's name (current bpftrace). */
  | { kind: 'int'; size: IntSize; signed: boolean; enum?: EnumInfo }
  | { kind: 'bool' }
  /**
   * NUL-padded string buffer of `size` bytes (includes room for the NUL). `wellFormed`: a `char[N]` member of a C
   * struct the program defines, which bpftrace types as `string[N+1]` (clang_parser.cpp), so a full one is never
   * printed as truncated (no `str_trunc_trailer`); BTF `char[N]` members stay plain (btf.cpp) and get the trailer.
   */
  | { kind: 'string'; size: number; wellFormed?: true }
  /**
   * Tuple: fields laid out as bpftrace lays them out (tupleLayout: natural alignment, no widening). With
   * `names`, a record (bpftrace's named tuple `(a = 1, b = "x")`): the same layout, fields also reachable by name.
   */
  | { kind: 'tuple'; elems: SType[]; names?: string[] }
  /** Seconds-resolution wall/boot timestamp etc. are added by later issues. */
  /** A kernel address printed as its symbol name (`ksym()`); stored as the u64 address. */
  | { kind: 'ksym' }
  /** A user address printed as its symbol name (`usym()`); stored as {u64 address, u32 pid, u32 0}. */
  | { kind: 'usym' }
  /** An IP address printed as text (`ntop()`); stored as {u64 address family, u8[16] address}. */
  | { kind: 'inet' }
  /** A MAC address printed as `XX:XX:XX:XX:XX:XX` (`macaddr()`); stored as u8[6]. */
  | { kind: 'macaddr' }
  /** `buf(data, n)`: up to `size` raw bytes; stored as {u64 length, u8[size]}. */
  | { kind: 'buffer'; size: number }
  /** An errno printed as its message (`strerror()`); stored as u64. */
  | { kind: 'errno' }
  /** A system call number printed as its name (`syscall_name()`); stored as u64. */
  | { kind: 'syscall_name' }
  /** A signal number printed as strsignal(3) text (`signal_name()`); stored as u64. */
  | { kind: 'signal_name' }
  /** A cgroup id printed as its paths, `unified:/a/b` (`cgroup_path(id[, filter])`); stored as u64. */
  | { kind: 'cgroup_path'; filter: string }
  /** A uid printed as the user's name (`username`); stored as u64. */
  | { kind: 'username' }
  /** A CLOCK_BOOTTIME/MONOTONIC ns value printed with a strftime format (`strftime()`); stored as u64 ns. */
  | { kind: 'timestamp'; fmt: string }
  | { kind: 'kstack'; limit: number; mode: 'bpftrace' | 'perf' | 'raw' }
  /** `build_id` mode (ustack only): frames read as the kernel's `struct bpf_stack_build_id`, printed unsymbolized. */
  | { kind: 'ustack'; limit: number; mode: 'bpftrace' | 'perf' | 'raw' | 'build_id' }
  /** Pointer into kernel or user memory; `to` is the pointee (a BTF/record type or an int). */
  | { kind: 'pointer'; to: SType; space: AddrSpace }
  /** A C struct/union from BTF or a tracepoint record. */
  | { kind: 'record'; name: string; size: number; fields: RecordField[]; btfId?: number }
  | { kind: 'array'; elem: SType; count: number }
  /** Aggregations (map values only). Per-CPU in the kernel, summed in user space. */
  | { kind: 'count' }
  | { kind: 'sum'; signed: boolean }
  | { kind: 'min'; signed: boolean }
  | { kind: 'max'; signed: boolean }
  | { kind: 'avg'; signed: boolean }
  | { kind: 'stats'; signed: boolean }
  /** log2 histogram: bucket index appended to the key (bpftrace layout), value a u64 count. */
  | { kind: 'hist'; bits: number }
  /** linear histogram over [min, max) in `step` wide buckets plus under/overflow buckets. */
  | { kind: 'lhist'; min: number; max: number; step: number }
  /**
   * time series (`tseries(n, interval, count[, agg])`, lang/builtins/tseries.ts): bucket index (epoch % count)
   * appended to the key; the value is `{u64 value, u64 meta, u64 epoch}` per CPU (bpftrace's layout). `interval`
   * is in nanoseconds; `signed` is the value argument's signedness.
   */
  | { kind: 'tseries'; interval: number; count: number; agg: TseriesAgg; signed: boolean };

/** How a tseries interval combines the values recorded in it: `none` keeps the last one (bpftrace's default). */
export type TseriesAgg = 'none' | 'avg' | 'sum' | 'min' | 'max';

/**
 * A named enum type (`enum E`, from the program's C definitions or from BTF): text output and printf `%s` print
 * a value as its enumerator's name (bpftrace v0.26 `types_format.cpp`); arithmetic gives plain integers, and a map
 * or variable that also holds other integers stores plain integers.
 */
export interface EnumInfo {
  /** `E` of `enum E` (`(anon N)` for an unnamed enum of the program). */
  name: string;
  /** Value → enumerator name (the first enumerator with that value). */
  names: ReadonlyMap<bigint, string>;
  /**
   * Named only, `names` empty: a tracepoint format field declared `enum E` (the format file gives no enumerators).
   * The analyser completes it from kernel BTF's `enum E` when the field is read, or drops it (plain integer).
   */
  unresolved?: true;
}

export interface RecordField {
  name: string;
  type: SType;
  /** Byte offset within the record. */
  offset: number;
  /** Bitfield width in bits, when the field is a bitfield. */
  bitSize?: number;
  bitOffset?: number;
  /**
   * Tracepoint `__data_loc` field (kernel `Documentation/trace/events.rst`): the record holds a u32 locator
   * `(length << 16) | offset` at `offset`, and the data (e.g. a NUL-terminated string for `__data_loc char[]`) lives
   * at record start + (locator & 0xffff). `type` is the type of the data (`string`, or `array` with count 0).
   */
  dataLoc?: boolean;
  /** With `dataLoc`: a `__rel_loc` field, whose data offset counts from the end of the 4-byte locator instead. */
  relLoc?: boolean;
}

export const NONE: SType = { kind: 'none' };
export const U64: SType = { kind: 'int', size: 8, signed: false };
export const I64: SType = { kind: 'int', size: 8, signed: true };
export const U32: SType = { kind: 'int', size: 4, signed: false };
export const I32: SType = { kind: 'int', size: 4, signed: true };
export const BOOL: SType = { kind: 'bool' };

/** Default `max_strlen` in bytes (bpftrace's default is 64). */
export const DEFAULT_STRLEN = 64;

export function stringType(size = DEFAULT_STRLEN): SType {
  return { kind: 'string', size };
}

export function isInt(t: SType): t is Extract<SType, { kind: 'int' }> {
  return t.kind === 'int';
}

export function isAggregation(t: SType): boolean {
  return ['count', 'sum', 'min', 'max', 'avg', 'stats', 'hist', 'lhist', 'tseries'].includes(t.kind);
}

/**
 * Alignment in bytes of a value of type `t` inside a tuple, record or map key, as bpftrace's
 * `SizedType::GetInTupleAlignment()` (`src/types.cpp`): strings and byte buffers 1, tuples and structs their largest
 * member's alignment, arrays their element's, other values up to 2 bytes their size, up to 4 bytes 4, else 8.
 * The types bpfscope stores as 64-bit words (usym, timestamp, cgroup_path, ...) keep an alignment of 8.
 */
export function alignOf(t: SType): number {
  switch (t.kind) {
    case 'int':
      return t.size;
    case 'bool':
      return 1;
    case 'string':
    case 'macaddr':
      return 1;
    case 'tuple':
      return t.elems.reduce((a, e) => Math.max(a, alignOf(e)), 1);
    case 'array':
      return t.count === 0 ? 1 : alignOf(t.elem);
    case 'record':
      return recordAlign(t);
    default:
      return 8;
  }
}

/**
 * A struct's alignment: its largest field's (C's rule; 1 when a field sits off its alignment: packed), or for a struct whose fields are not known here (a BTF
 * struct not yet loaded) the largest power of two up to 8 that divides its size.
 */
function recordAlign(t: Extract<SType, { kind: 'record' }>): number {
  if (t.fields.length > 0) {
    let a = 1;
    for (const f of t.fields) {
      const fa = Math.min(8, alignOf(f.type));
      if (f.bitSize === undefined && f.offset % fa !== 0) return 1; // a packed struct
      a = Math.max(a, fa);
    }
    return a;
  }
  let a = 8;
  while (a > 1 && t.size % a !== 0) a /= 2;
  return a;
}

/** Size in bytes of a value of type `t` as stored in BPF memory (stack, map key/value, ring buffer record). */
export function sizeOf(t: SType): number {
  switch (t.kind) {
    case 'none':
      return 0;
    case 'int':
      return t.size;
    case 'bool':
      return 1;
    case 'string':
      return t.size;
    case 'tuple':
      return tupleLayout(t.elems).size;
    case 'ksym':
    case 'pointer':
    case 'timestamp':
    case 'username':
    case 'errno':
    case 'syscall_name':
    case 'signal_name':
    case 'cgroup_path':
      return 8;
    case 'usym':
      return 16;
    case 'buffer':
      return 8 + t.size;
    case 'inet':
      return 24;
    case 'macaddr':
      return 6;
    case 'kstack':
    case 'ustack':
      return 16; // {s64 stack id (negative: no stack), u32 pid (for ustack symbolization), u32 0}
    case 'record':
      return t.size;
    case 'array':
      return sizeOf(t.elem) * t.count;
    case 'avg':
    case 'stats':
      return 16; // {total, count}
    case 'hist':
    case 'lhist':
    case 'tseries':
    case 'count':
    case 'sum':
    case 'min':
    case 'max':
      return 8;
  }
}

/**
 * Byte offsets of each element of a tuple: each at the next multiple of its alignment (alignOf), the total size
 * rounded up to the largest one, as bpftrace's `Struct::CreateRecord` (`src/struct.cpp`): `(int8, int16, int32)`
 * is 8 bytes, `(int32, int32[4])` 20.
 */
export function tupleLayout(elems: SType[]): { offsets: number[]; size: number } {
  let off = 0;
  let align = 1;
  const offsets: number[] = [];
  for (const e of elems) {
    const a = alignOf(e);
    align = Math.max(align, a);
    off = Math.ceil(off / a) * a;
    offsets.push(off);
    off += sizeOf(e);
  }
  return { offsets, size: Math.ceil(off / align) * align };
}

/**
 * A string identifying a type for equality: BTF records are identified by their BTF id (their fields load lazily
 * and reach most of the kernel through pointers), everything else structurally.
 */
export function typeKey(t: SType): string {
  switch (t.kind) {
    case 'int':
      return t.enum ? `enum ${t.enum.name}:${t.size}` : JSON.stringify(t);
    case 'record':
      return t.btfId !== undefined ? `record#${t.btfId}` : `record:${t.name}:${t.size}`;
    case 'pointer':
      return `ptr(${t.space},${typeKey(t.to)})`;
    case 'tuple':
      return t.names
        ? `(${t.elems.map((e, i) => `${t.names![i]}=${typeKey(e)}`).join(',')})`
        : `(${t.elems.map(typeKey).join(',')})`;
    case 'array':
      return `${typeKey(t.elem)}[${t.count}]`;
    case 'string': // `wellFormed` only changes how a full buffer prints, not the type
      return JSON.stringify({ kind: t.kind, size: t.size });
    default:
      return JSON.stringify(t);
  }
}

export function typeEquals(a: SType, b: SType): boolean {
  return typeKey(a) === typeKey(b);
}

/** Human-readable type name for diagnostics, in bpftrace's spelling (`uint64`, `string[64]`, `(int64,string[16])`). */
export function typeName(t: SType): string {
  switch (t.kind) {
    case 'int':
      if (t.enum) return `enum ${t.enum.name}`;
      return `${t.signed ? 'int' : 'uint'}${t.size * 8}`;
    case 'string':
      return `string[${t.size}]`;
    case 'tuple':
      return t.names
        ? `record { ${t.elems.map((e, i) => `${typeName(e)} ${t.names![i]}`).join(', ')} }`
        : `(${t.elems.map(typeName).join(',')})`;
    case 'pointer':
      return `${t.to.kind === 'none' ? 'void' : typeName(t.to)} *`;
    case 'record':
      return t.name;
    case 'buffer':
      return `buffer[${t.size}]`;
    case 'array':
      return `${typeName(t.elem)}[${t.count}]`;
    case 'sum':
    case 'min':
    case 'max':
    case 'avg':
    case 'stats':
      return `${t.signed ? '' : 'u'}${t.kind}_t`;
    case 'count':
      return 'count_t';
    case 'hist':
      return 'hist_t';
    case 'lhist':
      return 'lhist_t';
    case 'tseries':
      return 'tseries_t';
    default:
      return t.kind;
  }
}
