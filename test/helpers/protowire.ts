/**
 * A protobuf wire-format reader for tests (protobuf.dev "Encoding": varint tags, wire types 0/1/2/5), written apart
 * from the code under test so the fake receivers decode what the agent sends by themselves. `fields(buf)` lists a
 * message's fields in order; callers pick fields by the numbers of the published .proto definitions.
 */

export interface WireField {
  field: number;
  wire: number;
  /** Varint (wire 0) and fixed (wire 1, 5) values. */
  int?: bigint;
  /** Length-delimited (wire 2) bytes. */
  bytes?: Uint8Array;
}

function varint(buf: Uint8Array, pos: { i: number }): bigint {
  let v = 0n;
  let shift = 0n;
  for (;;) {
    if (pos.i >= buf.length) throw new Error('protobuf: truncated varint');
    const b = buf[pos.i++]!;
    v |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) return v;
    shift += 7n;
    if (shift > 63n) throw new Error('protobuf: varint too long');
  }
}

/** The fields of one message. Throws on malformed input (truncation, unknown wire type). */
export function fields(buf: Uint8Array): WireField[] {
  const out: WireField[] = [];
  const pos = { i: 0 };
  while (pos.i < buf.length) {
    const tag = varint(buf, pos);
    const field = Number(tag >> 3n);
    const wire = Number(tag & 7n);
    if (field === 0) throw new Error('protobuf: field number 0');
    if (wire === 0) out.push({ field, wire, int: varint(buf, pos) });
    else if (wire === 2) {
      const len = Number(varint(buf, pos));
      if (pos.i + len > buf.length) throw new Error('protobuf: truncated length-delimited field');
      out.push({ field, wire, bytes: buf.subarray(pos.i, pos.i + len) });
      pos.i += len;
    } else if (wire === 1 || wire === 5) {
      const n = wire === 1 ? 8 : 4;
      if (pos.i + n > buf.length) throw new Error('protobuf: truncated fixed field');
      let v = 0n;
      for (let k = n - 1; k >= 0; k--) v = (v << 8n) | BigInt(buf[pos.i + k]!);
      out.push({ field, wire, int: v });
      pos.i += n;
    } else throw new Error(`protobuf: unsupported wire type ${wire}`);
  }
  return out;
}

/** Length-delimited fields number `n` of `buf`. */
export function messages(buf: Uint8Array, n: number): Uint8Array[] {
  return fields(buf)
    .filter((f) => f.field === n)
    .map((f) => {
      if (f.wire !== 2) throw new Error(`protobuf: field ${n} is not length-delimited`);
      return f.bytes!;
    });
}

/** The string field `n` of `buf` ('' when absent, as proto3 defaults). */
export function stringField(buf: Uint8Array, n: number): string {
  const m = messages(buf, n);
  return m.length ? new TextDecoder().decode(m[m.length - 1]) : '';
}
