/**
 * `uaddr("symbol")` (bpftrace `docs/stdlib.md`): the run-time address of a symbol of the binary a uprobe, uretprobe
 * or usdt probe is attached to, resolved when the program is compiled from the binary's ELF symbol tables.
 */
import { ElfFile, fileOffsetToVaddr } from '../symbols/elf.js';
import type { UaddrTarget } from '../lang/target.js';
import type { ExpandedProbe } from './types.js';

/** ELF e_type of a fixed-address executable. */
const ET_EXEC = 2;
/** ELF symbol types a data/function address can name: STT_OBJECT, STT_FUNC, STT_TLS excluded. */
const STT_OBJECT = 1;
const STT_FUNC = 2;

export type { UaddrTarget } from '../lang/target.js';

/**
 * Resolve `uaddr(symbol)` for a probe. Returns the target, or a message saying why it cannot be resolved
 * (wrong probe type, unknown symbol, a uretprobe on a position-independent binary).
 */
export function resolveUaddr(probe: ExpandedProbe, symbol: string): UaddrTarget | string {
  const p = probe as ExpandedProbe & { path?: string; fileOffset?: number };
  if (!['uprobe', 'uretprobe', 'usdt'].includes(probe.provider) || p.path === undefined) {
    return `uaddr() can only be used in uprobe, uretprobe and usdt probes (not '${probe.provider}')`;
  }
  let elf: ElfFile;
  try {
    elf = ElfFile.open(p.path);
  } catch (e) {
    return `uaddr(): ${(e as Error).message}`;
  }
  try {
    const sym = elf
      .symbols()
      .find(symbol)
      .find((s) => s.type === STT_OBJECT || s.type === STT_FUNC);
    if (!sym) return `Could not resolve symbol: ${p.path}:${symbol}`;
    const target: UaddrTarget = { vaddr: sym.value, size: sym.size };
    if (elf.type === ET_EXEC) return target;
    // the bias is only knowable from the probed instruction's address, which a return probe does not have
    if (probe.provider === 'uretprobe' || p.fileOffset === undefined) {
      return `uaddr() in a uretprobe of a position-independent binary (${p.path}) is not supported yet: use the uprobe`;
    }
    const probeVaddr = fileOffsetToVaddr(elf.loadSegments(), p.fileOffset);
    if (probeVaddr === undefined) return `uaddr(): the probe's offset is outside ${p.path}'s loaded segments`;
    return { ...target, probeVaddr };
  } finally {
    elf.close();
  }
}
