/**
 * The events benchmark's shadow load (BENCH_EVENT_SHADOW=1): POSTs onEdit-sized JSON bodies to
 * a receiver at a steady rate from its own process, as the service's deliveries would, so the
 * machine carries the same HTTP traffic while the service has no trigger URL. Arguments: url,
 * rate per second, amount, and the epoch milliseconds at which to start (so its own start-up
 * is not part of the measured phase). Prints its CPU per call on stderr when done.
 */
import { Pool } from 'undici';

const [url, rate, amount, at] = [
  new URL(process.argv[2]!),
  Number(process.argv[3]),
  Number(process.argv[4]),
  Number(process.argv[5] ?? 0),
];
const pool = new Pool(url.origin, { connections: 64 });
const body = JSON.stringify({
  eventId: `evt_${'0'.repeat(32)}`,
  event: 'onEdit',
  triggerLevel: 'collection',
  collectionId: `col_${'1'.repeat(24)}`,
  itemId: `itm_${'2'.repeat(24)}`,
  key: 'k-1234',
  content: { n: -1234, stage: 'edited' },
  metadata: {},
  changed: { content: { n: 1234, name: 'customer 1234' }, metadata: {} },
  timestamp: new Date().toISOString(),
});
await new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));
const cpu0 = process.cpuUsage();
const started = performance.now();
const inFlight: Promise<unknown>[] = [];
let sent = 0;
while (sent < amount) {
  const due = Math.min(amount, Math.floor(((performance.now() - started) / 1000) * rate) + 1);
  for (; sent < due; sent++) {
    inFlight.push(
      pool
        .request({
          method: 'POST',
          path: url.pathname,
          body,
          headers: { 'content-type': 'application/json', 'x-api-key': 'bench-key' },
        })
        .then(
          (r) => r.body.dump(),
          () => undefined,
        ),
    );
  }
  await new Promise((r) => setTimeout(r, 1));
}
await Promise.all(inFlight);
await pool.close();
const cpu = process.cpuUsage(cpu0);
process.stderr.write(
  `shadow sender: ${amount} calls, ${Math.round((cpu.user + cpu.system) / amount)} µs CPU per call\n`,
);
