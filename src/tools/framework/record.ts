/**
 * Typed event records: a tool declares the records its program sends (a name per record kind, and per record its
 * fields with a type), and that one declaration gives both the kernel-side statement that emits a record
 * ({@link RecordSet.emit}) and the decoder that turns what arrives into a typed object
 * ({@link RecordSet.decode}), so the two cannot drift apart.
 *
 * Field types and what they decode to:
 * - `u32` / `s32`: a 32-bit unsigned / signed integer → number;
 * - `num`: an integer known to fit a double exactly (a 64-bit kernel value such as a syscall's return or a
 *   microsecond count) → number;
 * - `u64` / `s64`: a 64-bit unsigned / signed integer → bigint;
 * - `str`: a string → string.
 *
 * Transport (the only place that knows it): today a record travels as one bpftrace `printf` line: the record kind's
 * index, then the fields, separated by the ASCII unit separator `\x1f`, with the string fields last (in declaration
 * order) so that a separator inside the last string (a path, an argument) cannot shift the others; the other
 * string fields must not contain `\x1f` (addresses, task names). Switching to decoded printf arguments delivered by
 * the runtime only changes this module.
 */

export type FieldType = 'u32' | 's32' | 'num' | 'u64' | 's64' | 'str';

/** TypeScript type a field decodes to. */
export type FieldValue<T extends FieldType> = T extends 'u64' | 's64' ? bigint : T extends 'str' ? string : number;

/** Field declarations of one record kind, in order: name → type. */
export type FieldDecls = Readonly<Record<string, FieldType>>;

/** The decoded object of a record with fields `F`. */
export type RecordOf<F extends FieldDecls> = { -readonly [K in keyof F]: FieldValue<F[K]> };

/** The decoded objects of a record set: a union discriminated by `kind` (the record kind's name). */
export type DecodedOf<D extends Readonly<Record<string, FieldDecls>>> = {
  [K in keyof D & string]: { kind: K } & RecordOf<D[K]>;
}[keyof D & string];

/** The field separator of a record's text (ASCII unit separator). */
export const FIELD_SEP = '\x1f';

const CONVERSION: Record<FieldType, string> = { u32: '%u', s32: '%d', num: '%ld', u64: '%lu', s64: '%ld', str: '%s' };

interface KindPlan {
  name: string;
  /** Field names in transport order (numbers first, then strings). */
  order: string[];
  types: FieldType[];
}

export class RecordSet<D extends Readonly<Record<string, FieldDecls>>> {
  private readonly kinds: KindPlan[] = [];
  private readonly index = new Map<string, number>();

  constructor(readonly decls: D) {
    for (const [name, fields] of Object.entries(decls)) {
      const entries = Object.entries(fields);
      const ordered = [...entries.filter(([, t]) => t !== 'str'), ...entries.filter(([, t]) => t === 'str')];
      this.index.set(name, this.kinds.length);
      this.kinds.push({ name, order: ordered.map(([n]) => n), types: ordered.map(([, t]) => t) });
    }
  }

  /**
   * The bpftrace statement that sends one `kind` record: `exprs` gives each field's bpftrace expression, e.g.
   * `emit('exit', { pid: 'pid', comm: 'comm' })`.
   */
  emit<K extends keyof D & string>(kind: K, exprs: { readonly [F in keyof D[K]]: string }): string {
    const k = this.kinds[this.index.get(kind)!]!;
    const fmt = [String(this.index.get(kind)), ...k.types.map((t) => CONVERSION[t])].join('\\x1f');
    const args = k.order.map((n) => (exprs as Record<string, string>)[n]!);
    return `printf("${fmt}\\n"${args.map((a) => `, ${a}`).join('')});`;
  }

  /** The record carried by one line of program output (with or without its `\n`), or null if it is not one. */
  decode(text: string): DecodedOf<D> | null {
    const body = text.endsWith('\n') ? text.slice(0, -1) : text;
    const sep = body.indexOf(FIELD_SEP);
    const k = this.kinds[Number(sep < 0 ? body : body.slice(0, sep))];
    if (!k) return null;
    const out: Record<string, unknown> = { kind: k.name };
    let start = sep + 1;
    for (let i = 0; i < k.order.length; i++) {
      let end = i === k.order.length - 1 ? body.length : body.indexOf(FIELD_SEP, start);
      if (end < 0) end = body.length;
      const t = body.slice(start, end);
      start = end + 1;
      const type = k.types[i]!;
      out[k.order[i]!] = type === 'str' ? t : type === 'u64' || type === 's64' ? BigInt(t) : Number(t);
    }
    return out as DecodedOf<D>;
  }
}

/** Declare a tool's record kinds (see the module comment). */
export function records<const D extends Readonly<Record<string, FieldDecls>>>(decls: D): RecordSet<D> {
  return new RecordSet(decls);
}
