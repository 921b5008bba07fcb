/**
 * Tracepoint `format` files (tracefs `events/<category>/<event>/format`, described in the kernel's
 * `Documentation/trace/events.rst`): parse them into field records and map the fields to our {@link SType}s, which
 * gives the type of the `args` builtin in tracepoint probes.
 *
 * A format file looks like:
 * ```
 * name: sys_enter_openat
 * ID: 782
 * format:
 * 	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
 * 	...
 *
 * 	field:int __syscall_nr;	offset:8;	size:4;	signed:1;
 * 	field:const char * filename;	offset:24;	size:8;	signed:0;
 *
 * print fmt: "..."
 * ```
 * The first group of fields (before the blank line) are the `common_*` fields every event shares; BPF tracepoint
 * programs may not read them (the context starts readable at offset 8), and bpftrace hides them from `args` and
 * from `-lv`.
 */
import { BpfscopeError } from '../errors.js';
import { type IntSize, type RecordField, type SType, stringType } from '../lang/types.js';

/** One `field:` line of a format file. */
export interface TracepointField {
  /** The declaration exactly as written between `field:` and `;`, e.g. `const char * filename`, `char prev_comm[16]`. */
  decl: string;
  /** The C type text without the name and array suffix, e.g. `const char *`, `char`, `__data_loc char[]`. */
  cType: string;
  name: string;
  /** Byte offset in the record (from the record start, common fields included). */
  offset: number;
  /** Size in bytes in the record (the whole array for arrays; 4, the locator, for `__data_loc`). */
  size: number;
  signed: boolean;
  /** Element count for `name[N]` fields (0 for `name[]`); absent for non-arrays. */
  arrayLength?: number;
  /** `__data_loc` (or `__rel_loc`) dynamic field: the record holds a u32 `(length << 16) | offset` locator. */
  dataLoc: boolean;
  /** `__rel_loc`: the locator's offset counts from the end of the locator field. */
  relLoc: boolean;
  /** One of the shared `common_*` fields (the first group of the format); not readable from BPF. */
  common: boolean;
}

/** A parsed format file. */
export interface TracepointFormat {
  /** Event name (`name:` line). */
  name: string;
  /** Tracepoint id (`ID:` line), or -1 if the file has none. */
  id: number;
  /** All fields in file order, common fields included (marked `common`). */
  fields: TracepointField[];
}

const FIELD_RE = /^\s*field:([^;]*);\s*offset:(\d+);\s*size:(\d+);\s*signed:(\d+);/;

/**
 * Parse a tracepoint format file.
 * @throws BpfscopeError on a `field:` line that does not have the `field:DECL; offset:N; size:N; signed:N;` shape.
 */
export function parseTracepointFormat(text: string): TracepointFormat {
  let name = '';
  let id = -1;
  const fields: TracepointField[] = [];
  let inFormat = false;
  let group = 0; // 0: common fields; 1+: after the first blank line inside `format:`
  for (const line of text.split('\n')) {
    if (!inFormat) {
      if (line.startsWith('name:')) name = line.slice(5).trim();
      else if (line.startsWith('ID:')) id = Number.parseInt(line.slice(3).trim(), 10);
      else if (line.startsWith('format:')) inFormat = true;
      continue;
    }
    if (line.startsWith('print fmt:')) break;
    if (line.trim() === '') {
      if (fields.length > 0) group++;
      continue;
    }
    const m = FIELD_RE.exec(line);
    if (!m) {
      if (line.includes('field:')) throw new BpfscopeError(`cannot parse tracepoint format line: ${line.trim()}`);
      continue;
    }
    fields.push(parseDecl(m[1]!, Number(m[2]), Number(m[3]), m[4] === '1', group === 0));
  }
  return { name, id, fields };
}

function parseDecl(decl: string, offset: number, size: number, signed: boolean, common: boolean): TracepointField {
  const d = decl.trim();
  const cut = Math.max(d.lastIndexOf(' '), d.lastIndexOf('\t'));
  if (cut <= 0) throw new BpfscopeError(`cannot parse tracepoint field declaration: ${decl}`);
  let cType = d.slice(0, cut).trim();
  let name = d.slice(cut + 1);
  let arrayLength: number | undefined;
  const br = name.indexOf('[');
  if (br >= 0) {
    const inner = name.slice(br + 1, name.indexOf(']', br));
    if (inner !== '' && !/^\d+$/.test(inner)) {
      throw new BpfscopeError(`cannot parse array size of tracepoint field: ${decl}`);
    }
    arrayLength = inner === '' ? 0 : Number(inner);
    name = name.slice(0, br);
  }
  const dataLoc = /^__(data|rel)_loc\b/.test(cType);
  const relLoc = cType.startsWith('__rel_loc');
  cType = cType.replace(/\s+/g, ' ');
  const f: TracepointField = { decl, cType, name, offset, size, signed, dataLoc, relLoc, common };
  if (arrayLength !== undefined) f.arrayLength = arrayLength;
  return f;
}

/** C integer type names and typedefs we know the size and signedness of (x86-64 / LP64). */
const KNOWN_INTS: Record<string, [IntSize, boolean]> = {
  char: [1, true],
  'signed char': [1, true],
  'unsigned char': [1, false],
  short: [2, true],
  'short int': [2, true],
  'unsigned short': [2, false],
  'unsigned short int': [2, false],
  int: [4, true],
  'signed int': [4, true],
  signed: [4, true],
  unsigned: [4, false],
  'unsigned int': [4, false],
  long: [8, true],
  'long int': [8, true],
  'unsigned long': [8, false],
  'unsigned long int': [8, false],
  'long long': [8, true],
  'long long int': [8, true],
  'unsigned long long': [8, false],
  'unsigned long long int': [8, false],
  bool: [1, false],
  _Bool: [1, false],
  u8: [1, false],
  u16: [2, false],
  u32: [4, false],
  u64: [8, false],
  s8: [1, true],
  s16: [2, true],
  s32: [4, true],
  s64: [8, true],
  __u8: [1, false],
  __u16: [2, false],
  __u32: [4, false],
  __u64: [8, false],
  __s8: [1, true],
  __s16: [2, true],
  __s32: [4, true],
  __s64: [8, true],
  uint8_t: [1, false],
  uint16_t: [2, false],
  uint32_t: [4, false],
  uint64_t: [8, false],
  int8_t: [1, true],
  int16_t: [2, true],
  int32_t: [4, true],
  int64_t: [8, true],
  size_t: [8, false],
  ssize_t: [8, true],
  pid_t: [4, true],
  uid_t: [4, false],
  gid_t: [4, false],
  umode_t: [2, false],
  dev_t: [4, false],
  loff_t: [8, true],
  off_t: [8, true],
  sector_t: [8, false],
  gfp_t: [4, false],
};

/** Strip qualifiers (`const`, `volatile`, `__user`, ...) from a C type text. */
function stripQualifiers(t: string): string {
  return t
    .replace(/\b(const|volatile|restrict|__user|__kernel|__force|__iomem|__rcu)\b/g, ' ')
    .replace(/\s+/g, ' ')
    .replace(/\s*\*/g, ' *')
    .trim();
}

/**
 * The SType of a value of C type `t` (used for pointees and array elements, where the format gives no size).
 * Known integer names map to ints; `void` to `none`; pointers recurse; enums are 4-byte unsigned ints; anything else
 * (`struct x`, unknown typedefs) becomes an opaque record (`size` 0, no fields) named by the type, for the type
 * resolution pass to complete from BTF.
 */
function cTypeToSType(t: string, space: 'kernel' | 'user'): SType {
  const s = stripQualifiers(t);
  if (s.endsWith('*')) return { kind: 'pointer', to: cTypeToSType(s.slice(0, -1), space), space };
  if (s === 'void') return { kind: 'none' };
  const known = KNOWN_INTS[s];
  if (known) return { kind: 'int', size: known[0], signed: known[1] };
  if (s.startsWith('enum ')) return { kind: 'int', size: 4, signed: false };
  return { kind: 'record', name: s, size: 0, fields: [] };
}

function intOfSize(size: number, signed: boolean): SType | null {
  return size === 1 || size === 2 || size === 4 || size === 8 ? { kind: 'int', size, signed } : null;
}

/**
 * The SType of one tracepoint field, following bpftrace's tracepoint format parser:
 * - `__data_loc char[]` → `string` (of the default `max_strlen`; the real length is in the locator), other
 *   `__data_loc T[]` → `array` of T with count 0; the RecordField gets `dataLoc: true`;
 * - `char x[N]` → `string` of N bytes; other `T x[N]` → `array` of N elements of size `size / N`;
 * - pointers (`const char *`, `struct file *`) → `pointer` in `space` (char → int8, see {@link cTypeToSType});
 * - everything else → an int of the field's `size` and `signed` flag, whatever its typedef name (the kernel's
 *   syscall tracepoints declare `int dfd` with size 8); a size that is not 1/2/4/8 → `array` of `size` u8;
 * - `enum E x` → that int marked as an unresolved `enum E` (printed by enumerator name once the analyser finds
 *   `enum E` in kernel BTF, as bpftrace does: `skb:kfree_skb`'s `reason` prints `SKB_DROP_REASON_...`).
 * @param space address space of pointer fields: `user` for `syscalls:*` arguments, `kernel` otherwise.
 */
export function tracepointFieldType(f: TracepointField, space: 'kernel' | 'user'): SType {
  if (f.dataLoc) {
    const elem = f.cType
      .replace(/^__(data|rel)_loc\s*/, '')
      .replace(/\[\s*\]$/, '')
      .trim();
    if (stripQualifiers(elem) === 'char') return stringType();
    return { kind: 'array', elem: cTypeToSType(elem, 'kernel'), count: 0 };
  }
  if (f.arrayLength !== undefined) {
    const base = stripQualifiers(f.cType);
    if (base === 'char') return { kind: 'string', size: f.size };
    const count = f.arrayLength;
    const elemSize = count > 0 ? f.size / count : 0;
    let elem: SType = cTypeToSType(f.cType, space);
    if (elem.kind !== 'pointer' && (elem.kind !== 'int' || elem.size !== elemSize)) {
      elem = intOfSize(elemSize, f.signed) ?? elem;
    }
    return { kind: 'array', elem, count };
  }
  if (stripQualifiers(f.cType).endsWith('*')) return cTypeToSType(f.cType, space);
  const int = intOfSize(f.size, f.signed);
  const enumName = /^enum\s+(\w+)$/.exec(stripQualifiers(f.cType))?.[1];
  if (int?.kind === 'int' && enumName) return { ...int, enum: { name: enumName, names: new Map(), unresolved: true } };
  return int ?? { kind: 'array', elem: { kind: 'int', size: 1, signed: false }, count: f.size };
}

/**
 * The `args` record type of a tracepoint: every non-common field at its record offset (see
 * {@link tracepointFieldType}); `size` is the end of the last field. Named `struct <probe>_args` as current bpftrace
 * names it (e.g. `struct tracepoint:sched:sched_switch_args`).
 * @param category used to pick the pointer address space: `syscalls` arguments point into user memory.
 */
export function tracepointArgsType(category: string, event: string, format: TracepointFormat): SType {
  const space = category === 'syscalls' ? 'user' : 'kernel';
  const fields: RecordField[] = [];
  let size = 0;
  for (const f of format.fields) {
    size = Math.max(size, f.offset + f.size);
    if (f.common) continue;
    const rf: RecordField = { name: f.name, type: tracepointFieldType(f, space), offset: f.offset };
    if (f.dataLoc) rf.dataLoc = true;
    if (f.relLoc) rf.relLoc = true;
    fields.push(rf);
  }
  return { kind: 'record', name: `struct tracepoint:${category}:${event}_args`, size, fields };
}

/**
 * The argument lines `bpftrace -lv` prints under a tracepoint: each non-common field's declaration as written in the
 * format file, indented by four spaces (e.g. `    const char * filename`).
 */
export function tracepointArgLines(format: TracepointFormat): string[] {
  return format.fields.filter((f) => !f.common).map((f) => `    ${f.decl}`);
}
