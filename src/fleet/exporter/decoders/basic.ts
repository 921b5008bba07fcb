/** Decoders that reshape values: uint, string, hex, static_map, regexp (ebpf_exporter's decoder/*.go of the same names). */
import { DecodeError, type Decoder, describe, integer, SKIP } from './types.js';

/** uint: the integer in decimal (bytes: a little-endian integer of 1, 2, 4 or 8 bytes). */
export const uint: Decoder = (input) => {
  const v = integer(input, 'uint');
  return (v < 0n ? v + (1n << 64n) : v).toString();
};

/** string: text up to the first NUL (a string key is already text; bytes are read as UTF-8). */
export const string: Decoder = (input) => {
  if (typeof input === 'string') return cut(input);
  if (input instanceof Uint8Array) return cut(Buffer.from(input).toString('utf8'));
  if (typeof input === 'bigint' || typeof input === 'number' || typeof input === 'boolean') return String(input);
  throw new DecodeError(`decoder string cannot decode ${describe(input)}`);
};

function cut(s: string): string {
  const i = s.indexOf('\0');
  return i < 0 ? s : s.slice(0, i);
}

/** hex: the bytes as lowercase hex (integers: their little-endian bytes, 8 for bigint, 4 for number). */
export const hex: Decoder = (input) => {
  if (input instanceof Uint8Array) return Buffer.from(input).toString('hex');
  if (typeof input === 'string') return Buffer.from(input, 'utf8').toString('hex');
  if (typeof input === 'bigint' || typeof input === 'number') {
    const b = Buffer.alloc(typeof input === 'bigint' ? 8 : 4);
    if (typeof input === 'bigint') b.writeBigUInt64LE(BigInt.asUintN(64, input));
    else b.writeUInt32LE(input >>> 0);
    return b.toString('hex');
  }
  throw new DecodeError(`decoder hex cannot decode ${describe(input)}`);
};

/** static_map: the mapped text; unknown values are `unknown:VALUE`, or the value itself with allow_unknown. */
export const staticMap: Decoder = (input, conf) => {
  const key = typeof input === 'string' ? input : String(integer(input, 'static_map'));
  const v = conf.staticMap?.get(key);
  if (v !== undefined) return v;
  return conf.allowUnknown ? key : `unknown:${key}`;
};

/**
 * regexp: the first regexp that matches gives the label (its first capture group when it has exactly one, else the
 * whole match); when none matches the label set is dropped. JavaScript regexps (ebpf_exporter's are Go RE2: the
 * common syntax is the same).
 */
export const regexp: Decoder = (input, conf) => {
  const text = typeof input === 'string' ? input : string(input, conf);
  if (text === SKIP) return SKIP;
  for (const re of conf.regexps ?? []) {
    const m = re.exec(text);
    if (m) return m.length === 2 ? (m[1] ?? '') : m[0];
  }
  return SKIP;
};
