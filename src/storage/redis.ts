import { createRequire } from 'node:module';
import type { createClient } from 'redis';
import type { Logger } from '../config/logger.js';

// Loaded on first use: a start without REDIS_URL never pays for loading the client.
const redis = () => createRequire(import.meta.url)('redis') as { createClient: typeof createClient };

/** Until the first connection succeeds, give up after a few tries; afterwards reconnect forever. */
function newClient(url: string, state: { connectedOnce: boolean }) {
  return redis().createClient({
    url,
    socket: {
      connectTimeout: 5000,
      reconnectStrategy: (retries: number, cause: Error) => {
        if (!state.connectedOnce && retries >= 3) return new Error(`cannot reach Redis: ${cause.message}`);
        return Math.min((retries + 1) * 200, 5000);
      },
    },
  });
}

export type RedisClient = ReturnType<typeof newClient>;

/**
 * Connects to REDIS_URL. A Redis that is down at start fails the start (a scale-out deployment
 * without its Redis is misconfigured); later outages are logged and reported by /readyz while
 * the client reconnects.
 */
export async function connectRedis(url: string, log: Logger): Promise<RedisClient> {
  const state = { connectedOnce: false };
  const client = newClient(url, state);
  let lastError = '';
  client.on('error', (err: Error) => {
    if (err.message !== lastError) log.warn({ err: err.message }, 'redis connection error');
    lastError = err.message;
  });
  client.on('ready', () => {
    state.connectedOnce = true;
    lastError = '';
  });
  await client.connect();
  return client;
}

/**
 * Runs one command if the client is connected, waiting at most `timeoutMs`: the answer, or why
 * there is none (not connected, no answer in time, the command's error). Never rejects.
 */
export async function redisCommand<T>(
  client: RedisClient,
  timeoutMs: number,
  run: () => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; reason: string }> {
  if (!client.isReady) return { ok: false, reason: 'Redis is not connected' };
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      run().then((value) => ({ ok: true as const, value })),
      new Promise<{ ok: false; reason: string }>((resolve) => {
        timer = setTimeout(
          () => resolve({ ok: false, reason: `no answer from Redis within ${timeoutMs} ms` }),
          timeoutMs,
        );
      }),
    ]);
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

/** PING with a deadline, for readiness. */
export async function pingRedis(client: RedisClient, timeoutMs = 1000): Promise<boolean> {
  const answer = await redisCommand(client, timeoutMs, () => client.ping());
  return answer.ok && answer.value === 'PONG';
}
