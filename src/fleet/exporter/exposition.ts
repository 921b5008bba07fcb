/**
 * Prometheus exposition of the config metrics: text format 0.0.4 (Prometheus's `exposition_formats.md`) and
 * OpenMetrics 1.0 (`application/openmetrics-text`). prom-client writes the built-in and process metrics; these
 * families are computed per scrape from kernel maps, which prom-client's metric objects cannot hold (histograms
 * with given bucket counts), so they are written here.
 */

export interface Sample {
  /** Suffix after the family name (`_bucket`, `_count`, ``). */
  suffix: string;
  labels: readonly (readonly [string, string])[];
  value: string;
}

export interface Family {
  /** Full name (`ebpf_exporter_syscalls_total`). */
  name: string;
  help: string;
  type: 'counter' | 'histogram' | 'gauge';
  samples: Sample[];
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function escapeHelp(v: string, om: boolean): string {
  const s = v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
  return om ? s.replace(/"/g, '\\"') : s;
}

function labelText(labels: Sample['labels']): string {
  if (labels.length === 0) return '';
  return `{${labels.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}`;
}

/** A float as both formats read it (`+Inf`, integers without exponent up to 1e21). */
export function formatFloat(v: number): string {
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  if (Number.isNaN(v)) return 'NaN';
  return String(v);
}

/**
 * `families` in the text format, or in OpenMetrics (`om`): there a counter family's name drops `_total` (its
 * sample keeps it: `# TYPE x counter`, `x_total 3`); no `# EOF` (the caller ends the whole exposition).
 */
export function expose(families: readonly Family[], om: boolean): string {
  let out = '';
  for (const f of families) {
    let name = f.name;
    let sampleBase = f.name;
    if (om && f.type === 'counter') {
      name = f.name.replace(/_total$/, '');
      sampleBase = `${name}_total`;
    }
    out += `# HELP ${name} ${escapeHelp(f.help, om)}\n# TYPE ${name} ${f.type}\n`;
    for (const s of f.samples) out += `${sampleBase}${s.suffix}${labelText(s.labels)} ${s.value}\n`;
  }
  return out;
}
