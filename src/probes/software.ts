/**
 * The `software` provider (alias `s`): `software:EVENT[:COUNT]`, PERF_TYPE_SOFTWARE events on every online CPU
 * (`enum perf_sw_ids`), with bpftrace's event names, aliases and default counts. See `counter.ts`.
 */
import { PerfType } from '../kernel/perf.js';
import { type CounterEvents, CounterProvider } from './counter.js';

export const SOFTWARE_EVENTS: CounterEvents = {
  'cpu-clock': { aliases: ['cpu'], config: 0, count: 1_000_000 },
  'task-clock': { aliases: [], config: 1, count: 1_000_000 },
  'page-faults': { aliases: ['faults'], config: 2, count: 100 },
  'context-switches': { aliases: ['cs'], config: 3, count: 1000 },
  'cpu-migrations': { aliases: [], config: 4, count: 1 },
  'minor-faults': { aliases: [], config: 5, count: 100 },
  'major-faults': { aliases: [], config: 6, count: 1 },
  'alignment-faults': { aliases: [], config: 7, count: 1 },
  'emulation-faults': { aliases: [], config: 8, count: 1 },
  dummy: { aliases: [], config: 9, count: 1 },
  'bpf-output': { aliases: [], config: 10, count: 1 },
};

export function softwareProvider(): CounterProvider {
  return new CounterProvider(['software', 's'], PerfType.SOFTWARE, SOFTWARE_EVENTS);
}
