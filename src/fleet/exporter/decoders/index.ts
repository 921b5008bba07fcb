/** The decoder registry (names as ebpf_exporter's `decoder/decoder.go`) and label decoding. */
import type { DecoderName } from '../schema.js';
import type { LabelConfig } from '../config.js';
import { hex, regexp, staticMap, string, uint } from './basic.js';
import { cgroup, kstack, ksym, majorminor } from './kernel.js';
import { errno, syscall } from './names.js';
import { dname, ifname, inetIp } from './net.js';
import { pciClass, pciDevice, pciSubclass, pciVendor } from './pci.js';
import { type Decoder, type DecoderInput, SKIP } from './types.js';

export { DecodeError, SKIP } from './types.js';

export const DECODERS: Readonly<Record<DecoderName, Decoder>> = {
  cgroup,
  dname,
  errno,
  hex,
  ifname,
  inet_ip: inetIp,
  kstack,
  ksym,
  majorminor,
  pci_class: pciClass,
  pci_device: pciDevice,
  pci_subclass: pciSubclass,
  pci_vendor: pciVendor,
  regexp,
  static_map: staticMap,
  string,
  syscall,
  uint,
};

/**
 * The label values of one map key (`elements`: the key's elements in order), or SKIP to drop the label set.
 * @throws DecodeError when a decoder cannot decode its input
 */
export function decodeLabels(
  labels: readonly LabelConfig[],
  elements: readonly DecoderInput[],
): string[] | typeof SKIP {
  const out: string[] = [];
  for (let i = 0; i < labels.length; i++) {
    let v: DecoderInput = elements[i] ?? null;
    for (const d of labels[i]!.decoders) {
      const r = DECODERS[d.name](v, d);
      if (r === SKIP) return SKIP;
      v = r;
    }
    out.push(typeof v === 'string' ? v : String(v));
  }
  return out;
}
