import { createRequire } from 'node:module';
import type { createClient } from 'redis';
import type { Logger } from '../config/logger.js';

// Loaded on first use: a start without REDIS_URL never pays for the client (about 0.3 s).
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

/** PING with a deadline, for readiness. */
export async function pingRedis(client: RedisClient, timeoutMs = 1000): Promise<boolean> {
  if (!client.isReady) return false;
  let timer: NodeJS.Timeout | undefined;
  try {
    const result = await Promise.race([
      client.ping(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('redis ping timed out')), timeoutMs);
      }),
    ]);
    return result === 'PONG';
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
