/**
 * Type-level test of the public API (checked by test/api/types.test.ts with `tsc --noEmit -p test/types`; not part
 * of the normal build). Each `@ts-expect-error` line is a misuse the types must reject: if one compiled, tsc would
 * report the directive as unused and the test would fail. The other lines are correct uses that must compile.
 */
import { type Hist, type TraceEvent, trace } from '../../src/index.js';

export async function misuse(): Promise<void> {
  // @ts-expect-error the program is a string
  await trace(42);
  // @ts-expect-error pid is a number
  await trace('BEGIN {}', { pid: '123' });
  // @ts-expect-error bufferEvents is a number
  await trace('BEGIN {}', { bufferEvents: '10' });
  // @ts-expect-error no such option
  await trace('BEGIN {}', { pids: [1] });

  await using t = await trace('tracepoint:syscalls:sys_enter_openat { @opens[comm] = count(); }');

  // @ts-expect-error map names are written with their '@'
  await t.map('opens');
  // @ts-expect-error clear() too
  await t.clear('opens');

  const opens = await t.map<string, bigint>('@opens');
  // @ts-expect-error counts are bigint, not number
  const n: number | undefined = opens.get('bash');
  // @ts-expect-error the keys of this map are strings
  opens.get(42);
  const ok: bigint | undefined = opens.get('bash');

  const h = (await t.map<null, Hist>('@h')).get(null)!;
  // @ts-expect-error a bucket's low bound may be null (the bucket of negative values)
  const low: bigint = h.buckets[0]!.low;
  // @ts-expect-error no arithmetic mixing bigint and number
  const twice = h.buckets[0]!.count * 2;

  for await (const ev of t.events()) {
    // @ts-expect-error values exist on printf events only: narrow on kind first
    void ev.values;
    // @ts-expect-error text is a method on printf events and a string on time/cat/system events
    void ev.text();
    if (ev.kind === 'printf') {
      const v = ev.values[0];
      // @ts-expect-error a value may be a bigint or a string: no arithmetic before narrowing
      void (v + 1);
      if (typeof v === 'bigint') void (v + 1n);
      void ev.text().length;
    } else if (ev.kind === 'lost') {
      // @ts-expect-error the source is 'kernel' or 'consumer'
      if (ev.source === 'user') break;
      void ev.count.toFixed();
    } else if (ev.kind === 'exit') {
      // @ts-expect-error exit events carry no values
      void ev.values;
      void ev.code;
    }
  }
  const e: TraceEvent | undefined = undefined;
  void e;
  // @ts-expect-error close() returns a promise of nothing
  const closed: boolean = await t.close();
  void [n, ok, low, twice, closed];
}
