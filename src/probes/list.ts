/**
 * `bpfscope -l [PATTERN]` / `-lv`: list attach points as current bpftrace does (`src/probe_matcher.cpp`
 * get_probes_for_listing): one `provider:...` line per probe, and with `-v` the probe's arguments under it, indented
 * by four spaces (`    const char * filename`).
 *
 * PATTERN is `PROVIDER[:SEARCH]`. PROVIDER may be an alias (`t`) or a glob over the canonical names of the providers
 * shown in full listings (`*`); no pattern, `*` and `*:*` list everything. For tracepoints, a SEARCH without `:`
 * matches event names in every category (`-l 'tracepoint:*open*'` = `-l 'tracepoint:*:*open*'`), and a bare
 * `tracepoint` lists all of them. An unknown provider lists nothing (as bpftrace).
 */
import { byteCompare } from '../kernel/tracefs.js';
import { globToRegExp, hasWildcard } from './glob.js';
import { findProvider, providers } from './registry.js';
import type { ProbeProvider } from './types.js';

/**
 * Lines to print for `-l PATTERN` (`-lv` when `verbose`), without trailing newlines.
 * @throws BpfscopeError when tracefs cannot be read.
 */
export function listProbes(pattern: string | null, verbose: boolean): string[] {
  const full = pattern === null || pattern === '' || pattern === '*' ? '*:*' : pattern;
  const colon = full.indexOf(':');
  const providerPattern = colon < 0 ? full : full.slice(0, colon);
  let search = colon < 0 ? '' : full.slice(colon + 1);
  if (colon < 0) search = '*';

  let selected: ProbeProvider[];
  if (hasWildcard(providerPattern) || providerPattern === '') {
    const re = globToRegExp(providerPattern || '*');
    selected = providers().filter((p) => p.listed && re.test(p.names[0]!));
  } else {
    const p = findProvider(providerPattern);
    selected = p ? [p] : [];
  }
  // bpftrace walks the provider names in sorted order (a std::set).
  selected.sort((a, b) => byteCompare(a.names[0]!, b.names[0]!));
  return selected.flatMap((p) => p.list(search, verbose));
}
