/**
 * Shared helpers for the output tests: value constructors, a sink that captures what is written, and a small
 * C-oracle runner (compiles a C program with `cc` once per process and feeds it input on stdin).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SType } from '../../../src/lang/types.js';
import { linearBucketIndex, log2BucketIndex } from '../../../src/runtime/output/hist.js';
import type { AggValue, MapDump, Value } from '../../../src/runtime/output/model.js';
import { OutputSink } from '../../../src/runtime/output/sink.js';

export const U64: SType = { kind: 'int', size: 8, signed: false };
export const I64: SType = { kind: 'int', size: 8, signed: true };
export const STR: SType = { kind: 'string', size: 64 };

export function u64(v: number | bigint): Value {
  return { kind: 'int', value: BigInt(v), signed: false, size: 8 };
}
export function i64(v: number | bigint): Value {
  return { kind: 'int', value: BigInt(v), signed: true, size: 8 };
}
export function int(v: number | bigint, size: 1 | 2 | 4 | 8, signed: boolean): Value {
  return { kind: 'int', value: BigInt(v), signed, size };
}
export function str(s: string): Value {
  return { kind: 'string', value: s };
}
export function tuple(...elems: Value[]): Value {
  return { kind: 'tuple', elems };
}
export function count(n: number | bigint): AggValue {
  return { kind: 'count', value: BigInt(n), signed: false };
}

/** A log2 histogram aggregation filled with `values`, bucketed by the same function the BPF code mirrors. */
export function histOf(values: (number | bigint)[], bits = 0): AggValue {
  const buckets = new Map<number, bigint>();
  for (const v of values) {
    const i = log2BucketIndex(BigInt(v), bits);
    buckets.set(i, (buckets.get(i) ?? 0n) + 1n);
  }
  return { kind: 'hist', bits, buckets };
}

/** A linear histogram aggregation filled with `values`. */
export function lhistOf(values: (number | bigint)[], min: number, max: number, step: number): AggValue {
  const buckets = new Map<number, bigint>();
  for (const v of values) {
    const i = linearBucketIndex(BigInt(v), min, max, step);
    buckets.set(i, (buckets.get(i) ?? 0n) + 1n);
  }
  return { kind: 'lhist', min, max, step, buckets };
}

/** A scalar map `name` holding `value`. */
export function scalarMap(name: string, valueType: SType, value: Value | AggValue): MapDump {
  return { name, keyTypes: [], valueType, entries: [{ key: [], value }] };
}

/** A keyed map `name` with the given [key values, value] entries. */
export function keyedMap(
  name: string,
  keyTypes: SType[],
  valueType: SType,
  entries: [Value[], Value | AggValue][],
): MapDump {
  return { name, keyTypes, valueType, entries: entries.map(([key, value]) => ({ key, value })) };
}

/** An OutputSink that records what is written and when it is flushed, and never touches a descriptor. */
export class CaptureSink extends OutputSink {
  text = '';
  flushes = 0;
  constructor() {
    super(-1, { bufferSize: 0 });
  }
  override write(s: string): void {
    this.text += s;
  }
  override flush(): void {
    this.flushes++;
  }
}

/** Whether a C compiler is available (the oracle tests skip without one). */
export function haveCc(): boolean {
  return spawnSync('cc', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** Compile `source` with cc (cached in the temp directory by content hash) and return the binary's path. */
export function compileC(source: string): string {
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const dir = join(tmpdir(), 'bpfscope-output-oracle');
  mkdirSync(dir, { recursive: true });
  const bin = join(dir, `oracle-${hash}`);
  if (!existsSync(bin)) {
    const src = `${bin}.c`;
    writeFileSync(src, source);
    execFileSync('cc', ['-O0', '-w', '-o', bin, src]);
  }
  return bin;
}

/**
 * Run an oracle binary with `input` on stdin. The oracle answers each input line with `LEN:` followed by LEN
 * bytes; returns the answers as latin1 strings (byte-exact).
 */
export function runOracle(bin: string, input: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const out = execFileSync(bin, [], { input, env, maxBuffer: 256 * 1024 * 1024 });
  const res: string[] = [];
  let pos = 0;
  while (pos < out.length) {
    const colon = out.indexOf(0x3a, pos);
    const len = Number(out.subarray(pos, colon).toString('latin1'));
    res.push(out.subarray(colon + 1, colon + 1 + len).toString('latin1'));
    pos = colon + 1 + len;
  }
  return res;
}
