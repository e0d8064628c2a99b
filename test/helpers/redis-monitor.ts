import { randomBytes } from 'node:crypto';
import { createClient } from 'redis';

export interface RedisMonitor {
  /**
   * The commands Redis ran that mention the needle since the last call (a script's own
   * commands included), once Redis has run everything sent to it before this call.
   */
  take(): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * Watches Redis itself (MONITOR on a connection of its own) for the commands that mention
 * `needle`, e.g. a test's key prefix: what a component asked of Redis, whichever connection it
 * used. Redis runs commands one at a time and MONITOR reports them in that order, so a marker
 * command seen on the feed means every command before it has been reported.
 */
export async function monitorRedis(url: string, needle: string): Promise<RedisMonitor> {
  const monitor = createClient({ url });
  const marker = createClient({ url });
  await Promise.all([monitor.connect(), marker.connect()]);
  const seen: string[] = [];
  let waiting: { mark: string; resolve: () => void } | undefined;
  await monitor.monitor((line: string) => {
    if (waiting && line.includes(waiting.mark)) return waiting.resolve();
    if (line.includes(needle)) seen.push(line);
  });
  return {
    async take() {
      const mark = `monitor-mark-${randomBytes(8).toString('hex')}`;
      const marked = new Promise<void>((resolve) => (waiting = { mark, resolve }));
      await marker.get(mark);
      await marked;
      waiting = undefined;
      return seen.splice(0);
    },
    async close() {
      await Promise.all([monitor.close(), marker.close()]);
    },
  };
}
