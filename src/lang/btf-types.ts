/**
 * Kernel types from BTF as language types. Structs and unions become `record` types that carry their BTF id and
 * load their fields only when a field is accessed (task_struct alone reaches half the kernel through pointers), so
 * converting a type is cheap and never recursive. Integers keep their size and signedness, enums are integers,
 * `char[N]` arrays are strings (as bpftrace treats them), other arrays are arrays, pointers remember their pointee.
 */

import { BpfscopeError } from '../errors.js';
import { Btf, BtfKind } from '../kernel/btf.js';
import type { EnumInfo, IntSize, RecordField, SType } from './types.js';

let override: Btf | undefined;

/** The kernel's BTF (`/sys/kernel/btf/vmlinux`, parsed lazily and cached by `kernel/btf.ts`). */
export function kernelBtf(): Btf {
  if (override) return override;
  try {
    return Btf.vmlinux();
  } catch (e) {
    throw new BpfscopeError(`kernel BTF is not available (/sys/kernel/btf/vmlinux): ${(e as Error).message}`, {
      hint: 'struct types, curtask and rawtracepoint arguments need a kernel built with CONFIG_DEBUG_INFO_BTF',
    });
  }
}

/** Use `btf` instead of the kernel's (tests). */
export function useKernelBtf(btf: Btf | undefined): void {
  override = btf;
}

const fieldCache = new WeakMap<Btf, Map<number, RecordField[]>>();

/** Language type of BTF type `id` (typedefs and qualifiers skipped). */
export function btfType(btf: Btf, id: number): SType {
  const rid = btf.resolve(id);
  if (rid === 0) return { kind: 'none' };
  const k = btf.kind(rid);
  switch (k) {
    case BtfKind.INT: {
      const info = btf.intInfo(rid);
      if (info.bool) return { kind: 'bool' };
      const size = ([1, 2, 4, 8] as const).includes(info.size as IntSize) ? (info.size as IntSize) : 8;
      return { kind: 'int', size, signed: info.signed };
    }
    case BtfKind.ENUM:
    case BtfKind.ENUM64: {
      const size = btf.sizeOf(rid);
      const info = btfEnumInfo(btf, rid);
      return {
        kind: 'int',
        size: ([1, 2, 4, 8] as const).includes(size as IntSize) ? (size as IntSize) : 4,
        signed: false,
        ...(info ? { enum: info } : {}),
      };
    }
    case BtfKind.PTR: {
      const to = btf.refType(rid);
      const target = btf.resolve(to);
      const tk = target === 0 ? 0 : btf.kind(target);
      if (tk === BtfKind.STRUCT || tk === BtfKind.UNION)
        return { kind: 'pointer', to: recordStub(btf, target), space: 'kernel' };
      if (tk === BtfKind.INT) {
        const info = btf.intInfo(target);
        return {
          kind: 'pointer',
          to: { kind: 'int', size: (info.size as IntSize) || 1, signed: info.signed },
          space: 'kernel',
        };
      }
      // pointers to pointers and enums (`struct file **`, `enum x *`); the chain ends at a struct, an int or void
      if (tk === BtfKind.PTR || tk === BtfKind.ENUM || tk === BtfKind.ENUM64)
        return { kind: 'pointer', to: btfType(btf, target), space: 'kernel' };
      return { kind: 'pointer', to: { kind: 'none' }, space: 'kernel' };
    }
    case BtfKind.STRUCT:
    case BtfKind.UNION:
      return recordStub(btf, rid);
    case BtfKind.ARRAY: {
      const a = btf.arrayInfo(rid);
      const elem = btfType(btf, a.elemTypeId);
      if (elem.kind === 'int' && elem.size === 1) return { kind: 'string', size: Math.max(1, a.nelems) };
      return { kind: 'array', elem, count: a.nelems };
    }
    default:
      return { kind: 'none' };
  }
}

const enumCache = new WeakMap<Btf, Map<number, EnumInfo | undefined>>();

/**
 * The enumerators of BTF enum `id`, for printing its values by name; undefined for an anonymous enum (bpftrace
 * finds enum names by the enum's name, so anonymous kernel enums print as numbers).
 */
export function btfEnumInfo(btf: Btf, id: number): EnumInfo | undefined {
  let cache = enumCache.get(btf);
  if (!cache) {
    cache = new Map();
    enumCache.set(btf, cache);
  }
  if (cache.has(id)) return cache.get(id);
  const name = btf.name(id);
  let info: EnumInfo | undefined;
  if (name) {
    const names = new Map<bigint, string>();
    const bits = btf.sizeOf(id) * 8;
    for (const v of btf.enumValues(id)) {
      const u = BigInt.asUintN(bits, v.value);
      if (!names.has(u)) names.set(u, v.name);
    }
    info = { name, names };
  }
  cache.set(id, info);
  return info;
}

/** A record type for struct/union `id` whose fields are loaded on demand (see {@link recordFields}). */
function recordStub(btf: Btf, id: number): SType {
  const kw = btf.kind(id) === BtfKind.UNION ? 'union' : 'struct';
  const name = btf.name(id);
  return { kind: 'record', name: name ? `${kw} ${name}` : `${kw} (anon)`, size: btf.sizeOf(id), fields: [], btfId: id };
}

/**
 * The BTF record for a placeholder record type (a `struct X` named by a tracepoint format, with no fields), or the
 * type itself.
 */
export function withBtf(
  btf: Btf | undefined,
  t: Extract<SType, { kind: 'record' }>,
): Extract<SType, { kind: 'record' }> {
  if (t.btfId !== undefined || t.fields.length > 0 || !btf || !/^(struct|union) /.test(t.name)) return t;
  const r = btfRecordByName(btf, t.name);
  return r && r.kind === 'record' ? r : t;
}

/** The fields of a record type (BTF records load theirs now; anonymous members are flattened). */
export function recordFields(btf: Btf | undefined, t0: Extract<SType, { kind: 'record' }>): RecordField[] {
  const t = withBtf(btf, t0);
  if (t.btfId === undefined || !btf) return t.fields;
  let cache = fieldCache.get(btf);
  if (!cache) {
    cache = new Map();
    fieldCache.set(btf, cache);
  }
  let fields = cache.get(t.btfId);
  if (!fields) {
    fields = btf.members(t.btfId, { flatten: true }).map((m) => {
      const f: RecordField = { name: m.name, type: btfType(btf, m.typeId), offset: m.offset };
      if (m.bitSize) {
        f.bitSize = m.bitSize;
        f.bitOffset = m.bitOffset;
      }
      return f;
    });
    cache.set(t.btfId, fields);
  }
  return fields;
}

/**
 * A record type with its fields loaded, and those of nested structs/unions/arrays of them (pointers are left as they
 * are): what a struct *value* needs so it can be printed without BTF (`print(*p)`, `@x = args`). Depth-limited.
 */
export function materializeRecord(btf: Btf | undefined, t: SType, depth = 0): SType {
  if (depth > 8) return t;
  if (t.kind === 'array') return { ...t, elem: materializeRecord(btf, t.elem, depth + 1) };
  if (t.kind !== 'record') return t;
  const fields = recordFields(btf, t).map((f) => ({ ...f, type: materializeRecord(btf, f.type, depth + 1) }));
  return { ...withBtf(btf, t), fields };
}

/** `enum NAME` from BTF as a language type (an integer of the enum's size that prints by name), or undefined. */
export function btfEnumByName(btf: Btf, name: string): SType | undefined {
  const id = btf.findType(name, BtfKind.ENUM) ?? btf.findType(name, BtfKind.ENUM64);
  return id === undefined ? undefined : btfType(btf, id);
}

/** Look up `struct NAME` / `union NAME` / a typedef name; undefined when BTF has no such type. */
export function btfRecordByName(btf: Btf, spec: string): SType | undefined {
  const m = /^(struct|union)\s+(\S+)$/.exec(spec.trim());
  const kind = m ? (m[1] === 'union' ? BtfKind.UNION : BtfKind.STRUCT) : undefined;
  const name = m ? m[2]! : spec.trim();
  const id = kind !== undefined ? btf.findType(name, kind) : btf.findType(name);
  if (id === undefined) return undefined;
  return btfType(btf, id);
}

/** The BTF id of the kernel variable `name` (a VAR, e.g. the per-CPU `runqueues`), or undefined. */
export function btfVarId(btf: Btf, name: string): number | undefined {
  return btf.findType(name, BtfKind.VAR);
}
