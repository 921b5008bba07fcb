/**
 * PCI decoders: pci_vendor, pci_device, pci_class, pci_subclass (ebpf_exporter's decoder/pci_*.go), naming ids
 * from the pci.ids database (/usr/share/misc/pci.ids or /usr/share/hwdata/pci.ids, Debian's `pci.ids` package);
 * without it every label reads `missing pci.ids db`.
 * Inputs: pci_vendor a vendor id, pci_device `vendor << 16 | device`, pci_class a class id, pci_subclass
 * `class << 8 | subclass`.
 */
import { readFileSync } from 'node:fs';
import { type Decoder, integer } from './types.js';

const PATHS = ['/usr/share/misc/pci.ids', '/usr/share/hwdata/pci.ids'];
const MISSING = 'missing pci.ids db';

interface PciDb {
  vendors: Map<string, string>;
  devices: Map<string, string>;
  classes: Map<string, string>;
  subclasses: Map<string, string>;
}

let db: PciDb | null | undefined;

function load(): PciDb | null {
  if (db !== undefined) return db;
  db = null;
  for (const p of PATHS) {
    let text: string;
    try {
      text = readFileSync(p, 'latin1');
    } catch {
      continue;
    }
    const out: PciDb = { vendors: new Map(), devices: new Map(), classes: new Map(), subclasses: new Map() };
    let vendor = '';
    let cls = '';
    let inClasses = false;
    for (const line of text.split('\n')) {
      if (line === '' || line.startsWith('#')) continue;
      let m: RegExpExecArray | null;
      if ((m = /^C ([0-9a-f]{2})\s+(.*)$/.exec(line))) {
        inClasses = true;
        cls = m[1]!;
        out.classes.set(cls, m[2]!);
      } else if ((m = /^([0-9a-f]{4})\s+(.*)$/.exec(line))) {
        inClasses = false;
        vendor = m[1]!;
        out.vendors.set(vendor, m[2]!);
      } else if ((m = /^\t([0-9a-f]{2,4})\s+(.*)$/.exec(line))) {
        if (inClasses) out.subclasses.set(cls + m[1]!, m[2]!);
        else out.devices.set(vendor + m[1]!, m[2]!);
      }
    }
    db = out;
    break;
  }
  return db;
}

function hex(n: bigint, digits: number): string {
  return n.toString(16).padStart(digits, '0');
}

export const pciVendor: Decoder = (input) => {
  const d = load();
  if (!d) return MISSING;
  const k = hex(integer(input, 'pci_vendor'), 4);
  return d.vendors.get(k) ?? `unknown pci vendor: 0x${k}`;
};

export const pciDevice: Decoder = (input) => {
  const d = load();
  if (!d) return MISSING;
  const k = hex(integer(input, 'pci_device'), 8);
  return d.devices.get(k) ?? `unknown pci device: 0x${k}`;
};

export const pciClass: Decoder = (input) => {
  const d = load();
  if (!d) return MISSING;
  const k = hex(integer(input, 'pci_class'), 2);
  return d.classes.get(k) ?? `unknown pci class: 0x${k}`;
};

export const pciSubclass: Decoder = (input) => {
  const d = load();
  if (!d) return MISSING;
  const n = integer(input, 'pci_subclass');
  const c = hex(n >> 8n, 2);
  const s = hex(n & 0xffn, 2);
  if (!d.classes.has(c)) return `unknown pci class: 0x${c}`;
  return d.subclasses.get(c + s) ?? `unknown pci subclass: 0x${s} (class 0x${c})`;
};
