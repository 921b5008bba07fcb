/**
 * C definitions written in a program before its probes (bpftrace `docs/language.md` "C definitions"):
 * `struct NAME { ... };`, `union NAME { ... };` and `enum NAME { A, B = 2 };`, parsed into the language's types so
 * that casts (`(struct A *)arg0`), `sizeof`/`offsetof`, member access and enumerators work as with BTF types. A
 * definition replaces a kernel type of the same name, as in bpftrace (whose clang parse of the program's C comes
 * before BTF).
 *
 * Layout follows the x86-64 System V ABI: each member at the next multiple of its alignment (1 with
 * `__attribute__((packed))`), bitfields packed into units of their declared type without straddling one, the size
 * rounded up to the largest alignment. Member types: the C integer types (`char` .. `unsigned long long`, `_Bool`),
 * the fixed-width names (`uint32_t`, `u32`, `__u32`, `s64`, ...), kernel typedefs from BTF, `struct`/`union`/`enum`
 * types defined earlier or in BTF, pointers, arrays (`char[N]` is a string, as for BTF types) and function pointers
 * (a pointer). Anonymous nested structs/unions are flattened into their parent, as BTF members are. A floating-point
 * member (`float` 4 bytes, `double` 8, `long double` 16) takes its place in the layout but holds no value the
 * language can read: it is typed `none` and prints as `null` (bpftrace v0.26 clang_parser.cpp gives such members
 * its `none` type, printed `null` by its text and JSON output).
 *
 * @throws CompileError positioned in the definition: a syntax error, an unknown type.
 */
import { btfEnumByName, btfRecordByName, kernelBtf } from './btf-types.js';
import { CompileError, LineIndex } from './diagnostics.js';
import type { Span } from './ast.js';
import { alignOf, type EnumInfo, type IntSize, type RecordField, type SType, sizeOf } from './types.js';

/** One definition's text as written, and its span in the program (`pos.offset`: where the text starts). */
export interface CDefinition {
  text: string;
  pos: Span;
}

/** What a program's C definitions declare. */
export interface CTypes {
  /** `struct NAME` / `union NAME` → record type (fields loaded). */
  records: Map<string, Extract<SType, { kind: 'record' }>>;
  /** `enum NAME` → its integer type (4 bytes, unsigned: as BTF enums are read). */
  enums: Map<string, SType>;
  /** Enumerator name → value and its enum's type. */
  enumerators: Map<string, { value: bigint; type: SType }>;
}

export function emptyCTypes(): CTypes {
  return { records: new Map(), enums: new Map(), enumerators: new Map() };
}

interface Tok {
  kind: 'ident' | 'num' | 'punct';
  text: string;
  /** Offset in the program's text. */
  start: number;
}

const INT_WORDS: Record<string, { size: IntSize; signed: boolean }> = {
  u8: { size: 1, signed: false },
  u16: { size: 2, signed: false },
  u32: { size: 4, signed: false },
  u64: { size: 8, signed: false },
  s8: { size: 1, signed: true },
  s16: { size: 2, signed: true },
  s32: { size: 4, signed: true },
  s64: { size: 8, signed: true },
  uint8_t: { size: 1, signed: false },
  uint16_t: { size: 2, signed: false },
  uint32_t: { size: 4, signed: false },
  uint64_t: { size: 8, signed: false },
  int8_t: { size: 1, signed: true },
  int16_t: { size: 2, signed: true },
  int32_t: { size: 4, signed: true },
  int64_t: { size: 8, signed: true },
  uint8: { size: 1, signed: false },
  uint16: { size: 2, signed: false },
  uint32: { size: 4, signed: false },
  uint64: { size: 8, signed: false },
  int8: { size: 1, signed: true },
  int16: { size: 2, signed: true },
  int32: { size: 4, signed: true },
  int64: { size: 8, signed: true },
  size_t: { size: 8, signed: false },
  ssize_t: { size: 8, signed: true },
  uintptr_t: { size: 8, signed: false },
  pid_t: { size: 4, signed: true },
};
for (const n of [8, 16, 32, 64]) {
  INT_WORDS[`__u${n}`] = INT_WORDS[`u${n}`]!;
  INT_WORDS[`__s${n}`] = INT_WORDS[`s${n}`]!;
}

/**
 * The types made for a plain `char` (no `signed`/`unsigned`, no typedef): only arrays of these are strings, as in
 * bpftrace's clang_parser.cpp (CXType_Char_S/Char_U elements); `unsigned char`, `int8_t`, `u8`... arrays are
 * integer arrays.
 */
const PLAIN_CHAR = new WeakSet<SType>();

/**
 * The `none` types made for floating-point members, with their size in bytes (which is also their alignment on
 * x86-64): the layout places them, nothing reads them.
 */
const FLOAT_BYTES = new WeakMap<SType, number>();

/** A floating-point member's type: `none`, placed in the layout as `bytes` bytes. */
function floatType(bytes: number): SType {
  const t: SType = { kind: 'none' };
  FLOAT_BYTES.set(t, bytes);
  return t;
}

/** Bytes a member of type `t` takes in a C struct: its size, a floating-point member's (or array's) included. */
function cSize(t: SType): number {
  const f = FLOAT_BYTES.get(t);
  if (f !== undefined) return f;
  if (t.kind === 'array') return t.count * cSize(t.elem);
  return sizeOf(t);
}

/**
 * A C type written as one word in a cast or a declaration (`char`, `short`, `int`, `long`, `unsigned`, `signed`,
 * `_Bool`, and the fixed-width names `uint64_t`, `u32`, `__s16`, `size_t`, ...), as its C definition would type it
 * (x86-64: `long` is 8 bytes, `char` signed); undefined for other names (structs, typedefs left to BTF).
 */
export function cWordType(name: string): SType | undefined {
  const fixed = INT_WORDS[name];
  if (fixed) return { kind: 'int', ...fixed };
  const words: Record<string, SType> = {
    char: { kind: 'int', size: 1, signed: true },
    short: { kind: 'int', size: 2, signed: true },
    int: { kind: 'int', size: 4, signed: true },
    long: { kind: 'int', size: 8, signed: true },
    signed: { kind: 'int', size: 4, signed: true },
    unsigned: { kind: 'int', size: 4, signed: false },
    _Bool: { kind: 'bool' },
  };
  return words[name];
}

const QUALIFIERS = new Set(['const', 'volatile', 'restrict', '__restrict', 'static', 'extern', 'register']);

/** Byte alignment of a member of type `t` in a C struct (x86-64 SysV). */
function cAlign(t: SType, own: WeakMap<object, number>, depth = 0): number {
  switch (t.kind) {
    case 'int':
      return t.size;
    case 'bool':
    case 'string':
      return 1;
    case 'array':
      return cAlign(t.elem, own, depth + 1);
    case 'none':
      return Math.min(16, FLOAT_BYTES.get(t) ?? 1);
    case 'record': {
      const known = own.get(t);
      if (known !== undefined) return known;
      // a BTF struct: the largest power of two up to 8 that divides its size
      let a = 8;
      while (a > 1 && t.size % a !== 0) a /= 2;
      return a;
    }
    default:
      return Math.min(8, alignOf(t));
  }
}

/** Parse the program's C definitions, in order (later ones may use earlier ones). @throws CompileError */
export function parseCDefinitions(defs: readonly CDefinition[], programText: string): CTypes {
  const out = emptyCTypes();
  const align = new WeakMap<object, number>();
  const idx = new LineIndex(programText);
  for (const d of defs) new CParser(d, (a, b) => idx.span(a, b), out, align).definitions();
  return out;
}

class CParser {
  private readonly toks: Tok[] = [];
  private i = 0;

  constructor(
    private readonly def: CDefinition,
    /** Span of program text offsets [start, end). */
    private readonly span: (start: number, end: number) => Span,
    private readonly out: CTypes,
    private readonly align: WeakMap<object, number>,
  ) {
    this.tokenize();
  }

  private fail(message: string, at?: Tok): never {
    const t = at ?? this.toks[Math.min(this.i, this.toks.length - 1)];
    const start = t ? t.start : this.def.pos.offset;
    const end = t ? t.start + t.text.length : this.def.pos.end;
    throw new CompileError([{ severity: 'error', message, pos: this.span(start, end) }]);
  }

  private tokenize(): void {
    const s = this.def.text;
    const base = this.def.pos.offset;
    let p = 0;
    while (p < s.length) {
      const c = s[p]!;
      if (/\s/.test(c)) {
        p++;
      } else if (s.startsWith('//', p)) {
        const nl = s.indexOf('\n', p);
        p = nl < 0 ? s.length : nl;
      } else if (s.startsWith('/*', p)) {
        const e = s.indexOf('*/', p + 2);
        p = e < 0 ? s.length : e + 2;
      } else if (/[A-Za-z_]/.test(c)) {
        const m = /^[A-Za-z_]\w*/.exec(s.slice(p))!;
        this.toks.push({ kind: 'ident', text: m[0], start: base + p });
        p += m[0].length;
      } else if (/\d/.test(c)) {
        const m = /^(0x[0-9a-f]+|\d+)[uUlL]*/i.exec(s.slice(p))!;
        this.toks.push({ kind: 'num', text: m[0], start: base + p });
        p += m[0].length;
      } else {
        this.toks.push({ kind: 'punct', text: c, start: base + p });
        p++;
      }
    }
  }

  private peek(k = 0): Tok | undefined {
    return this.toks[this.i + k];
  }

  private at(text: string): boolean {
    return this.peek()?.text === text;
  }

  private eat(text: string): boolean {
    if (!this.at(text)) return false;
    this.i++;
    return true;
  }

  private expect(text: string): Tok {
    const t = this.peek();
    if (t?.text !== text) this.fail(`expected '${text}' in the C definition${t ? `, got '${t.text}'` : ''}`);
    this.i++;
    return t;
  }

  private ident(what: string): Tok {
    const t = this.peek();
    if (t?.kind !== 'ident') this.fail(`expected ${what} in the C definition`);
    this.i++;
    return t;
  }

  /** `__attribute__((...))` lists: true when one says `packed`. */
  private attributes(): boolean {
    let packed = false;
    while (this.at('__attribute__') || this.at('__packed')) {
      if (this.eat('__packed')) {
        packed = true;
        continue;
      }
      this.i++;
      this.expect('(');
      let depth = 1;
      while (depth > 0) {
        const t = this.peek();
        if (!t) this.fail('unterminated __attribute__ in the C definition');
        this.i++;
        if (t.text === '(') depth++;
        else if (t.text === ')') depth--;
        else if (t.text === 'packed' || t.text === '__packed__') packed = true;
      }
    }
    return packed;
  }

  private number(): bigint {
    const neg = this.eat('-');
    const t = this.peek();
    if (t?.kind === 'num') {
      this.i++;
      const v = BigInt(t.text.replace(/[uUlL]+$/, ''));
      return neg ? -v : v;
    }
    if (t?.kind === 'ident' && this.out.enumerators.has(t.text)) {
      this.i++;
      const v = this.out.enumerators.get(t.text)!.value;
      return neg ? -v : v;
    }
    return this.fail('expected an integer constant in the C definition');
  }

  /** Every definition of this text (`struct A {...}; enum B {...};`). */
  definitions(): void {
    while (this.peek()) {
      const kw = this.peek()!;
      if (kw.text === 'struct' || kw.text === 'union') this.record(false);
      else if (kw.text === 'enum') this.enumDef();
      else this.fail(`expected 'struct', 'union' or 'enum' in the C definition, got '${kw.text}'`);
      this.attributes();
      this.eat(';');
    }
  }

  private enumDef(): SType {
    this.expect('enum');
    const name = this.peek()?.kind === 'ident' ? this.ident('a name').text : undefined;
    if (!this.eat('{')) {
      if (name === undefined) this.fail("expected '{' after 'enum'");
      return this.enumType(name);
    }
    const names = new Map<bigint, string>();
    const info: EnumInfo = { name: name ?? `(anon ${this.out.enums.size})`, names };
    const t: SType = { kind: 'int', size: 4, signed: false, enum: info };
    let next = 0n;
    while (!this.eat('}')) {
      const e = this.ident('an enumerator');
      if (this.eat('=')) next = this.number();
      this.out.enumerators.set(e.text, { value: next, type: t });
      const u = BigInt.asUintN(32, next);
      if (!names.has(u)) names.set(u, e.text);
      next++;
      if (!this.eat(',') && !this.at('}')) this.fail("expected ',' or '}' in the enum");
    }
    this.out.enums.set(`enum ${info.name}`, t);
    return t;
  }

  private enumType(name: string): SType {
    const mine = this.out.enums.get(`enum ${name}`);
    if (mine) return mine;
    return btfEnumByName(kernelBtf(), name) ?? this.fail(`Unknown type: 'enum ${name}'`);
  }

  /**
   * `struct|union [NAME] [{ members }]`: the record type (defined here when it has a body, else a reference to one
   * defined earlier or in BTF). `inMember`: inside another definition, where a bare reference is allowed.
   */
  private record(inMember: boolean): Extract<SType, { kind: 'record' }> {
    const kw = this.peek()!.text as 'struct' | 'union';
    this.i++;
    this.attributes();
    const nameTok = this.peek()?.kind === 'ident' && !this.at('__attribute__') ? this.ident('a name') : undefined;
    const full = nameTok ? `${kw} ${nameTok.text}` : `${kw} (anon)`;
    if (!this.at('{')) {
      if (!nameTok) this.fail(`expected '{' after '${kw}'`);
      if (!inMember) this.fail(`expected '{' after '${full}' (a definition needs its members)`);
      return this.recordRef(full, nameTok);
    }
    this.expect('{');
    // created before its members so that members may point to it (`struct node *next;`)
    const rec: Extract<SType, { kind: 'record' }> = { kind: 'record', name: full, size: 0, fields: [] };
    if (nameTok) this.out.records.set(full, rec);
    const members: { name: string | undefined; type: SType; bits?: number; at: Tok }[] = [];
    while (!this.eat('}')) {
      if (!this.peek()) this.fail(`expected '}' closing '${full}'`);
      this.member(members);
    }
    const packed = this.attributes();
    this.layout(rec, kw === 'union', members, packed);
    return rec;
  }

  private recordRef(full: string, at: Tok): Extract<SType, { kind: 'record' }> {
    const mine = this.out.records.get(full);
    if (mine) return mine;
    const btf = btfRecordByName(kernelBtf(), full);
    if (btf && btf.kind === 'record') return btf;
    return this.fail(`Unknown type: '${full}'`, at);
  }

  /** One member declaration (`int a, *b, c[4];`, `unsigned x:3;`, `struct { ... };`), appended to `out`. */
  private member(out: { name: string | undefined; type: SType; bits?: number; at: Tok }[]): void {
    const start = this.peek()!;
    const base = this.baseType();
    if (this.eat(';')) {
      // an anonymous struct/union member: its fields are the parent's
      if (base.kind !== 'record') this.fail('a member needs a name', start);
      out.push({ name: undefined, type: base, at: start });
      return;
    }
    for (;;) {
      // an unnamed bitfield (`unsigned :0;` starts a new unit) has no declarator
      const d = this.at(':') ? { name: undefined, type: base, at: this.peek()! } : this.declarator(base);
      let bits: number | undefined;
      if (this.eat(':')) bits = Number(this.number());
      out.push({ name: d.name, type: d.type, at: d.at, ...(bits !== undefined ? { bits } : {}) });
      this.attributes();
      if (this.eat(';')) return;
      // the last member's ';' may be missing (`struct x { unsigned long x }`: GNU C accepts it, and bpftrace)
      if (this.at('}')) return;
      this.expect(',');
    }
  }

  /** The type words before a declarator: qualifiers, integer words, struct/union/enum, or a typedef name. */
  private baseType(): SType {
    while (this.peek() && QUALIFIERS.has(this.peek()!.text)) this.i++;
    const t = this.peek();
    if (!t) return this.fail('expected a type in the C definition');
    if (t.text === 'struct' || t.text === 'union') return this.record(true);
    if (t.text === 'enum') {
      if (this.peek(2)?.text === '{' || this.peek(1)?.text === '{') return this.enumDef();
      this.i++;
      return this.enumType(this.ident('an enum name').text);
    }
    // C's integer words in any order: [un]signed, char, short, int, long [long]
    let signed: boolean | undefined;
    let size: IntSize | undefined;
    let longs = 0;
    let words = 0;
    for (;;) {
      const w = this.peek()?.text;
      if (w === 'unsigned' || w === 'signed') signed = w === 'signed';
      else if (w === 'char') size = 1;
      else if (w === 'short') size = 2;
      else if (w === 'int') size ??= 4;
      else if (w === 'long') longs++;
      else if (w !== undefined && QUALIFIERS.has(w)) {
        /* skip */
      } else break;
      this.i++;
      words++;
    }
    if (words > 0) {
      if (longs === 1 && size === undefined && signed === undefined && this.peek()?.text === 'double') {
        this.i++;
        return floatType(16); // `long double`: x87 extended precision, 16 bytes on x86-64
      }
      if (longs > 0) size = 8;
      const int: SType = { kind: 'int', size: size ?? 4, signed: signed ?? true };
      if (size === 1 && signed === undefined) PLAIN_CHAR.add(int);
      return int;
    }
    this.i++;
    if (t.kind !== 'ident') this.fail(`expected a type in the C definition, got '${t.text}'`, t);
    if (t.text === '_Bool' || t.text === 'bool') return { kind: 'bool' };
    if (t.text === 'void') return { kind: 'none' };
    if (t.text === 'float' || t.text === 'double') return floatType(t.text === 'float' ? 4 : 8);
    const fixed = INT_WORDS[t.text];
    if (fixed) return { kind: 'int', ...fixed };
    const typedef = btfRecordByName(kernelBtf(), t.text);
    if (typedef && typedef.kind !== 'none') return typedef;
    return this.fail(`Unknown type: '${t.text}'`, t);
  }

  /** `*...NAME[N]...`, or a function pointer `(*NAME)(...)`: the member's name and type. */
  private declarator(base: SType): { name: string; type: SType; at: Tok } {
    let type = base;
    while (this.eat('*')) {
      type = { kind: 'pointer', to: type, space: 'kernel' };
      while (this.peek() && QUALIFIERS.has(this.peek()!.text)) this.i++;
    }
    if (this.eat('(')) {
      // function pointer: `ret (*name)(params)`
      this.expect('*');
      const at = this.ident('a member name');
      this.expect(')');
      this.expect('(');
      for (let depth = 1; depth > 0;) {
        const t = this.peek();
        if (!t) this.fail("expected ')' closing the parameter list");
        this.i++;
        if (t.text === '(') depth++;
        else if (t.text === ')') depth--;
      }
      return { name: at.text, type: { kind: 'pointer', to: { kind: 'none' }, space: 'kernel' }, at };
    }
    const at = this.ident('a member name');
    if (type.kind === 'none' && !FLOAT_BYTES.has(type)) this.fail(`member '${at.text}' has type void`, at);
    const dims: number[] = [];
    while (this.eat('[')) {
      dims.push(this.at(']') ? 0 : Number(this.number()));
      this.expect(']');
    }
    for (const n of dims.reverse()) {
      type = PLAIN_CHAR.has(type)
        ? { kind: 'string', size: Math.max(1, n), wellFormed: true }
        : { kind: 'array', elem: type, count: n };
    }
    return { name: at.text, type, at };
  }

  /** Place the members (SysV x86-64), fill `rec`'s fields and size, and record its alignment. */
  private layout(
    rec: Extract<SType, { kind: 'record' }>,
    union: boolean,
    members: { name: string | undefined; type: SType; bits?: number; at: Tok }[],
    packed: boolean,
  ): void {
    let bit = 0; // next free bit (structs)
    let size = 0;
    let maxAlign = 1;
    const fields: RecordField[] = [];
    const names = new Set<string>();
    const add = (f: RecordField, at: Tok) => {
      if (names.has(f.name)) this.fail(`duplicate member '${f.name}' in '${rec.name}'`, at);
      names.add(f.name);
      fields.push(f);
    };
    for (const m of members) {
      const a = packed ? 1 : cAlign(m.type, this.align);
      const bytes = cSize(m.type);
      let at: number;
      if (m.bits !== undefined) {
        if (m.type.kind !== 'int' && m.type.kind !== 'bool') this.fail('a bitfield must have an integer type', m.at);
        const unit = bytes * 8;
        if (m.bits > unit) this.fail(`bitfield '${m.name}' is wider than its type`, m.at);
        if (union) at = 0;
        else {
          if (m.bits === 0 || (!packed && Math.floor(bit / unit) !== Math.floor((bit + m.bits - 1) / unit)))
            bit = Math.ceil(bit / unit) * unit;
          at = bit;
          bit += m.bits;
        }
        maxAlign = Math.max(maxAlign, a);
        if (m.bits === 0 || m.name === undefined) continue;
        add({ name: m.name, type: m.type, offset: Math.floor(at / 8), bitOffset: at, bitSize: m.bits }, m.at);
        size = Math.max(size, Math.ceil((at + m.bits) / 8));
        continue;
      }
      if (union) at = 0;
      else {
        bit = Math.ceil(bit / (8 * a)) * 8 * a;
        at = bit / 8;
        bit += bytes * 8;
      }
      maxAlign = Math.max(maxAlign, a);
      size = Math.max(size, at + bytes);
      if (m.name !== undefined) add({ name: m.name, type: m.type, offset: at }, m.at);
      else if (m.type.kind === 'record') {
        for (const f of m.type.fields) {
          add(
            {
              ...f,
              offset: f.offset + at,
              ...(f.bitOffset !== undefined ? { bitOffset: f.bitOffset + at * 8 } : {}),
            },
            m.at,
          );
        }
      }
    }
    rec.fields = fields;
    rec.size = Math.ceil(size / maxAlign) * maxAlign;
    this.align.set(rec, maxAlign);
  }
}
