/**
 * `bpfscope -l [PATTERN]` / `-lv`: list attach points as current bpftrace does (`src/probe_matcher.cpp`
 * get_probes_for_listing): one `provider:...` line per probe, and with `-v` the probe's arguments under it, indented
 * by four spaces (`    const char * filename`).
 *
 * PATTERN is `PROVIDER[:SEARCH]`. PROVIDER may be an alias (`t`) or a glob over the canonical names of the providers
 * shown in full listings (`*`); no pattern, `*` and `*:*` list everything. A pattern without `:` searches every
 * listed provider (`-l '*sched_switch*'`), except a bare provider name, which lists all of its probes. For
 * tracepoints, a SEARCH without `:` matches event names in every category (`-l 'tracepoint:*open*'` =
 * `-l 'tracepoint:*:*open*'`). An unknown provider lists nothing (as bpftrace).
 */
import { byteCompare } from '../kernel/tracefs.js';
import { globToRegExp, hasWildcard } from './glob.js';
import { isTypeSearch, listTypes } from './list-types.js';
import { findProvider, providers } from './registry.js';
import type { ProbeProvider } from './types.js';

/**
 * Lines to print for `-l PATTERN` (`-lv` when `verbose`), without trailing newlines. PATTERN may hold several
 * searches separated by commas (`kprobe:vfs_read,struct file`), each listed in turn, as bpftrace does; a search
 * starting with `struct `/`union `/`enum ` lists kernel types (see list-types.ts).
 * @throws BpfscopeError when tracefs cannot be read.
 */
export function listProbes(pattern: string | null, verbose: boolean, opts: { pid?: number } = {}): string[] {
  if (pattern === null || pattern === '') return listOne('*:*', verbose, opts);
  return pattern.split(',').flatMap((raw) => {
    const search = raw.replace(/\s+/g, ' ').trim();
    return isTypeSearch(search) ? listTypes(search, verbose) : listOne(search, verbose, opts);
  });
}

/** Providers of user-space probes: listed under a wildcard provider only for a file (`*:./bin:*`) or with `-p`. */
const USER_PROVIDERS = ['uprobe', 'usdt'];

function listOne(pattern: string, verbose: boolean, opts: { pid?: number }): string[] {
  let full = pattern === '' || pattern === '*' ? '*:*' : pattern;
  // bpftrace: a search without `:` is a search over every provider (`*do_nanosleep*` = `*:*do_nanosleep*`); a bare
  // provider name (`tracepoint`, `t`) lists that provider's probes.
  if (!full.includes(':')) full = !hasWildcard(full) && findProvider(full) ? `${full}:*` : `*:${full}`;
  const colon = full.indexOf(':');
  const providerPattern = full.slice(0, colon);
  const search = full.slice(colon + 1);

  let selected: ProbeProvider[];
  if (hasWildcard(providerPattern) || providerPattern === '') {
    const re = globToRegExp(providerPattern || '*');
    // bpftrace lists uprobes and USDT probes of a file named in the search (`*:./bin:*`) or of the -p process
    const user = opts.pid !== undefined || search.includes('/');
    selected = providers().filter(
      (p) => (p.listed || (user && USER_PROVIDERS.includes(p.names[0]!))) && re.test(p.names[0]!),
    );
  } else {
    const p = findProvider(providerPattern);
    selected = p ? [p] : [];
  }
  // bpftrace walks the provider names in sorted order (a std::set).
  selected.sort((a, b) => byteCompare(a.names[0]!, b.names[0]!));
  return selected.flatMap((p) => p.list(search, verbose, opts));
}

/**
 * bpftrace's warning for `-l NAME` where NAME looks like a file name (has a `.`, no `:` or `*`) but no such file
 * exists, so it is searched for as a pattern instead; null when there is nothing to warn about.
 */
export function filenameLikeWarning(search: string): string | null {
  if (!search.includes('.') || /[:*]/.test(search)) return null;
  return `It appears that '${search}' is a filename but the file does not exist. Treating '${search}' as a search pattern.`;
}
