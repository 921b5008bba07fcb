/**
 * The `hardware` provider (alias `h`): `hardware:EVENT[:COUNT]` on the CPU's performance monitoring unit
 * (PERF_TYPE_HARDWARE, `enum perf_hw_id`), with bpftrace's event names, aliases and default counts. Whether the PMU
 * exists is detected by opening an event at compile time: machines without one (most VMs, like the development
 * VM) get one clear sentence instead of an attach failure. See `counter.ts`.
 */
import { onlineCpus } from '../kernel/cpus.js';
import { close as closeFd } from '../kernel/ffi.js';
import { PerfType } from '../kernel/perf.js';
import { type CounterEvents, CounterProvider, openCounter } from './counter.js';

export const HARDWARE_EVENTS: CounterEvents = {
  'cpu-cycles': { aliases: ['cycles'], config: 0, count: 1_000_000 },
  instructions: { aliases: [], config: 1, count: 1_000_000 },
  'cache-references': { aliases: [], config: 2, count: 1_000_000 },
  'cache-misses': { aliases: [], config: 3, count: 1_000_000 },
  'branch-instructions': { aliases: ['branches'], config: 4, count: 100_000 },
  'branch-misses': { aliases: [], config: 5, count: 100_000 },
  'bus-cycles': { aliases: [], config: 6, count: 100_000 },
  'frontend-stalls': { aliases: [], config: 7, count: 1_000_000 },
  'backend-stalls': { aliases: [], config: 8, count: 1_000_000 },
  'ref-cycles': { aliases: [], config: 9, count: 1_000_000 },
};

let pmu: string | null | undefined;

/** null when hardware events open here, else the sentence to show. Cached. */
function pmuProblem(): string | null {
  if (pmu !== undefined) return pmu;
  try {
    closeFd(openCounter(PerfType.HARDWARE, 0, 1_000_000, onlineCpus()[0] ?? 0).fd);
    pmu = null;
  } catch {
    pmu =
      'hardware events are not available: this machine has no hardware performance counters (PMU) the kernel exposes';
  }
  return pmu;
}

export function hardwareProvider(): CounterProvider {
  return new CounterProvider(
    ['hardware', 'h'],
    PerfType.HARDWARE,
    HARDWARE_EVENTS,
    pmuProblem,
    'virtual machines often have none; use software events (software:cpu-clock, profile:hz:99) instead',
  );
}
