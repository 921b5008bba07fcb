/**
 * The decoder interface: a label's decoders turn the map key element (a typed value from the API: bigint/number,
 * string, Uint8Array for buf(), a stack, ...) into the label's text, in order; each later decoder gets the text
 * the previous one produced. ebpf_exporter's decoders (`decoder/*.go`) start from the key's raw bytes instead; a
 * bpftrace key is already typed, so bpfscope's decoders accept the typed value and also the bytes where that is
 * what a program has (`buf()`).
 */
import type { TraceValue } from '../../../api/index.js';
import type { DecoderConfig } from '../config.js';

/** Returned by a decoder to drop the whole label set (regexp without a match, as ebpf_exporter's ErrSkipLabelSet). */
export const SKIP = Symbol('skip label set');

export type DecoderInput = TraceValue;
export type Decoder = (input: DecoderInput, conf: DecoderConfig) => string | typeof SKIP;

/** Thrown by a decoder for an input it cannot decode; counted in ebpf_exporter_decoder_errors_total. */
export class DecodeError extends Error {}

/** An integer input (bigint, number, or decimal text) as a bigint; else a DecodeError. */
export function integer(input: DecoderInput, decoder: string): bigint {
  if (typeof input === 'bigint') return input;
  if (typeof input === 'number' && Number.isInteger(input)) return BigInt(input);
  if (typeof input === 'boolean') return input ? 1n : 0n;
  if (typeof input === 'string' && /^-?\d+$/.test(input)) return BigInt(input);
  if (input instanceof Uint8Array && [1, 2, 4, 8].includes(input.length)) {
    let v = 0n;
    for (let i = input.length - 1; i >= 0; i--) v = (v << 8n) | BigInt(input[i]!);
    return v;
  }
  throw new DecodeError(`decoder ${decoder} needs an integer, got ${describe(input)}`);
}

export function describe(v: DecoderInput): string {
  if (v instanceof Uint8Array) return `${v.length} bytes`;
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'bigint' || typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v === null) return 'none';
  return typeof v === 'object' && 'stack' in v ? 'a stack' : 'a composite value';
}
