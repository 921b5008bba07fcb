/**
 * The typed API's side of bench/api/run.mjs: runs `PROGRAM` with trace() and `-c`-style `COMMAND`, reads every event
 * through events() and prints one JSON object: printf events, lost events (kernel and consumer), the CLOCK_MONOTONIC
 * time the last printf event was read (stamped every 64 events and at the last one: exact to within 64 events) and
 * this process's CPU time from the workload's start (after trace() resolved) to the end. MODE `events`: `for await (const ev of t.events())`; `batches`: `for await (const b of
 * t.batches()) for (const ev of b)`. Usage: node consumer.mjs DIST_INDEX_JS MODE PROGRAM COMMAND
 */
const [, , index, mode, program, command] = process.argv;
const { trace } = await import(index);
let events = 0;
let lost = 0;
let lastNs = 0n;
let sum = 0n;
const t = await trace(program, { command });
// from here on: the command starts once trace() has attached (compile and load are not counted, as for the CLI)
const cpu0 = process.cpuUsage();
const onEvent = (ev) => {
  if (ev.kind === 'printf') {
    // touch the typed values as a consumer would
    sum += ev.values[0];
    if ((++events & 63) === 0) lastNs = process.hrtime.bigint();
  } else if (ev.kind === 'lost') {
    lost += ev.count;
  } else if (ev.kind === 'exit' && (events & 63) !== 0) {
    // the events since the last stamp were read before the exit event: stamp them no later than now
    lastNs = process.hrtime.bigint();
  }
};
try {
  if (mode === 'batches') {
    for await (const batch of t.batches()) for (const ev of batch) onEvent(ev);
  } else {
    for await (const ev of t.events()) onEvent(ev);
  }
} finally {
  await t.close();
}
const cpu = process.cpuUsage(cpu0);
process.stdout.write(
  `${JSON.stringify({ events, lost, lastNs: Number(lastNs), cpuMs: (cpu.user + cpu.system) / 1000, sum: String(sum) })}\n`,
);
