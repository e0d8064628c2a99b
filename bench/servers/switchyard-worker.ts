/**
 * A worker-only Switchyard process (`npm run worker`: runs, no HTTP) for the scale-out bench
 * (bench/runs.ts with BENCH_RUNS_STORE=pg). Takes its store and Redis from the environment; prints
 * one JSON line once its run workers consume.
 */
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/config/logger.js';
import { createRuntime } from '../../src/app.js';

const config = loadConfig({ ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent' });
const runtime = await createRuntime(config, createLogger(config.logLevel));
process.stdout.write(JSON.stringify({ url: '', workerId: runtime.workers.workerId }) + '\n');
process.on('SIGTERM', () => void runtime.close().then(() => process.exit(0)));
