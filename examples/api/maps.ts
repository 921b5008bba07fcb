// Typed maps: counts as bigint, a histogram as buckets (docs/api.md, "Maps").
// Run as root: node dist/examples/api/maps.js
import { type Hist, trace } from '../../src/index.js';

const t = await trace(
  `tracepoint:syscalls:sys_enter_write /comm == "dd" && args.count == 4096/ {
     @writes[comm] = count(); @sizes = hist(args.count); @avg = avg(args.count);
   }`,
  { command: 'dd if=/dev/zero of=/dev/null bs=4096 count=10 status=none' },
);
try {
  await t.exited; // dd has exited, END has run; maps stay readable until close()
  const writes = await t.map<string, bigint>('@writes');
  console.log(`dd wrote 4096 bytes ${writes.get('dd')} times`);
  const sizes = (await t.map<null, Hist>('@sizes')).get(null)!;
  for (const b of sizes.buckets) console.log(`[${b.low}, ${b.high}): ${b.count}`);
  console.log((await t.map('@avg')).get(null));
} finally {
  await t.close();
}
