/**
 * The provider registry: maps provider names and aliases (bpftrace's `src/probe_types.h` PROBE_LIST) to
 * {@link ProbeProvider}s. Providers bpftrace has that bpfscope does not implement yet are registered as stubs, so
 * they fail with "not supported yet" rather than "Invalid probe type"; an implementation replaces its stub with
 * {@link registerProvider}. Lookup is exact first, then case-insensitive (current bpftrace's provider names are
 * case-insensitive: `BEGIN`, `Tracepoint`; the exact pass keeps `U` = usdt apart from `u` = uprobe).
 */
import type { AttachPoint } from '../lang/ast.js';
import { attachPointError, closestNames, didYouMean } from './errors.js';
import { BenchProvider } from './bench.js';
import { IntervalProvider } from './interval.js';
import { IterProvider } from './iter.js';
import { FentryProvider } from './fentry.js';
import { hardwareProvider } from './hardware.js';
import { KprobeProvider } from './kprobe.js';
import { ProfileProvider } from './profile.js';
import { RawTracepointProvider } from './rawtracepoint.js';
import { softwareProvider } from './software.js';
import { SelfProvider, SpecialProvider } from './special.js';
import { TracepointProvider } from './tracepoint.js';
import type { ExpandedProbe, ExpandOptions, ProbeProvider } from './types.js';
import { UprobeProvider } from './uprobe.js';
import { UsdtProvider } from './usdt.js';

/** A provider bpftrace has and bpfscope does not implement yet: expanding it is a positioned "not supported" error. */
export class UnsupportedProvider implements ProbeProvider {
  readonly supported = false;
  readonly listed = false;
  constructor(readonly names: readonly string[]) {}

  /** @throws CompileError `NAME probes are not supported by bpfscope yet` at the attach point. */
  expand(ap: AttachPoint): ExpandedProbe[] {
    throw attachPointError(ap, `${this.names[0]} probes are not supported by bpfscope yet`);
  }

  list(): string[] {
    return [];
  }
}

/** Known-but-unimplemented providers with bpftrace's aliases. */
const STUBS: readonly (readonly string[])[] = [['watchpoint', 'w']];

const registered: ProbeProvider[] = [
  new SpecialProvider('begin'),
  new SpecialProvider('end'),
  new SelfProvider(),
  new BenchProvider('bench'),
  new BenchProvider('test'),
  new TracepointProvider(),
  new IntervalProvider(),
  new ProfileProvider(),
  new KprobeProvider('kprobe'),
  new KprobeProvider('kretprobe'),
  new RawTracepointProvider(),
  new FentryProvider('fentry'),
  new FentryProvider('fexit'),
  softwareProvider(),
  hardwareProvider(),
  new UsdtProvider(),
  new UprobeProvider('uprobe'),
  new UprobeProvider('uretprobe'),
  new IterProvider(),
  ...STUBS.map((names) => new UnsupportedProvider(names)),
];

/**
 * Add a provider, replacing any registered provider that shares its canonical name (e.g. a real `kprobe` provider
 * replacing the stub). Aliases of the new provider take precedence over the same alias elsewhere.
 */
export function registerProvider(p: ProbeProvider): void {
  const i = registered.findIndex((r) => r.names[0] === p.names[0]);
  if (i >= 0) registered.splice(i, 1);
  registered.unshift(p);
}

/** All registered providers (supported ones and stubs). */
export function providers(): readonly ProbeProvider[] {
  return registered;
}

/** The provider called `name` (canonical or alias; exact match first, then case-insensitive), or undefined. */
export function findProvider(name: string): ProbeProvider | undefined {
  const exact = registered.find((p) => p.names.includes(name));
  if (exact) return exact;
  const lower = name.toLowerCase();
  return registered.find((p) => p.names.some((n) => n.toLowerCase() === lower));
}

/**
 * The provider of an attach point.
 * @throws CompileError `Invalid probe type: NAME` (bpftrace's wording) at the attach point, with a "Did you mean"
 * hint naming the closest provider names.
 */
export function providerFor(ap: AttachPoint): ProbeProvider {
  const p = findProvider(ap.provider);
  if (p) return p;
  const names = registered.flatMap((r) => r.names);
  const hint = didYouMean(closestNames(ap.provider.toLowerCase(), names));
  throw attachPointError(ap, `Invalid probe type: ${ap.provider}`, hint);
}

/**
 * Expand one attach point into its concrete probes (see {@link ProbeProvider.expand}).
 * @throws CompileError for an unknown or unsupported provider, a malformed attach point or no match.
 */
export function expandAttachPoint(ap: AttachPoint, opts: ExpandOptions = {}): ExpandedProbe[] {
  return providerFor(ap).expand(ap, opts);
}
