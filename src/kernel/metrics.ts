/**
 * The service's Prometheus metrics (README "Metrics"): one prom-client `Registry` of its own
 * (never the library's global one), the definitions every context records into, and the
 * helpers that keep recording cheap. Served by src/observability/metrics-server.ts when
 * METRICS_PORT is set; without it nothing reads them and recording is a few additions.
 *
 * Conventions: `switchyard_…_total` counters, base units (`_seconds`), HELP on each. No label
 * carries an id of an organisation, run, user, workflow or connection, nor a name a tenant
 * chose: every label value comes from a fixed set (test/unit/kernel/metrics.test.ts checks the
 * names). Node's default process metrics keep their standard `process_*` and `nodejs_*` names.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const registry = new Registry();

/** Latency buckets (seconds) for calls answered in milliseconds to seconds. */
const FAST = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Runs: milliseconds for a code step, up to RUN_TIMEOUT_MS (10 min by default). */
const RUNS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
/** Model calls: a fraction of a second to a few minutes. */
const MODEL = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300];

const registers = [registry];

type Sampler = () => void | Promise<void>;
const samplers = new Map<Gauge, Set<Sampler>>();

/** A gauge whose values are set at scrape time by the samplers given to `sampleOnScrape`. */
function sampledGauge<L extends string>(config: { name: string; help: string; labelNames?: readonly L[] }): Gauge<L> {
  const own = new Set<Sampler>();
  const gauge = new Gauge<L>({
    ...config,
    registers,
    // The registry awaits this before it reads the gauge.
    async collect() {
      await Promise.all(
        [...own].map(async (sample) => {
          try {
            await sample();
          } catch {
            // the last values stand
          }
        }),
      );
    },
  });
  samplers.set(gauge as Gauge, own);
  return gauge;
}

// ---- HTTP (src/http/pipeline.ts) ----

export const httpRequests = new Counter({
  name: 'switchyard_http_requests_total',
  help: 'HTTP requests answered on the product port, by operationId ("unknown" when no route matched) and status class.',
  labelNames: ['operation', 'status_class'] as const,
  registers,
});

export const httpDuration = new Histogram({
  name: 'switchyard_http_request_duration_seconds',
  help: 'Time from the request to its reply (a streamed body: to its headers), by operationId and status class.',
  labelNames: ['operation', 'status_class'] as const,
  buckets: FAST,
  registers,
});

// ---- Runs (src/runs, src/triggers) ----

export const runsStarted = new Counter({
  name: 'switchyard_runs_started_total',
  help: 'Run executions started in this process (a run re-run after recovery counts again), by trigger kind.',
  labelNames: ['trigger'] as const,
  registers,
});

export const runsFinished = new Counter({
  name: 'switchyard_runs_finished_total',
  help: 'Runs this process finished, by terminal status and trigger kind.',
  labelNames: ['status', 'trigger'] as const,
  registers,
});

export const runDuration = new Histogram({
  name: 'switchyard_run_duration_seconds',
  help: 'Execution time of the runs this process finished, by terminal status and trigger kind.',
  labelNames: ['status', 'trigger'] as const,
  buckets: RUNS,
  registers,
});

export const runsRecovered = new Counter({
  name: 'switchyard_runs_recovered_total',
  help: 'Runs whose worker was lost (lease expired), found by this process: queued again or failed (no attempts left).',
  labelNames: ['outcome'] as const,
  registers,
});

export const runsInFlight = new Gauge({
  name: 'switchyard_runs_in_flight',
  help: 'Runs executing in this process now.',
  registers,
});

export const runsPending = sampledGauge({
  name: 'switchyard_runs_pending',
  help: 'Runs PENDING in the store (all processes; counted up to 100000, refreshed at most every 2 s).',
});

export const syncCallersWaiting = new Gauge({
  name: 'switchyard_sync_callers_waiting',
  help: 'Synchronous trigger calls waiting in this process for their run to finish.',
  registers,
});

// ---- Gateway (src/gateway, src/servers/sidekick) ----

export const gatewayToolCalls = new Counter({
  name: 'switchyard_gateway_tool_calls_total',
  help: 'Tool calls through the gateway, by server (the built-in server, or "application" for every proxied one) and outcome (ok, tool_error: the tool returned isError, error: the call failed).',
  labelNames: ['server', 'outcome'] as const,
  registers,
});

export const upstreamDuration = new Histogram({
  name: 'switchyard_gateway_upstream_request_duration_seconds',
  help: 'Requests to application servers (MCP, OpenAPI or coding-agent upstreams), by method (tools/call, tools/list) and outcome (ok, error).',
  labelNames: ['method', 'outcome'] as const,
  buckets: FAST,
  registers,
});

export const upstreamListings = sampledGauge({
  name: 'switchyard_gateway_upstream_listings',
  help: "Application servers' tool lists cached in this process, by state (fresh, stale: older than 30 s or never answered, failed: the last refresh failed).",
  labelNames: ['state'] as const,
});

export const upstreamListingAge = sampledGauge({
  name: 'switchyard_gateway_upstream_listing_oldest_age_seconds',
  help: 'Age of the oldest application server tool list cached in this process (0 with none).',
});

export const discoveryDuration = new Histogram({
  name: 'switchyard_discovery_duration_seconds',
  help: 'capabilities_discover requests, by outcome (ok, error).',
  labelNames: ['outcome'] as const,
  buckets: FAST,
  registers,
});

// ---- Events (src/events) ----

export const eventDeliveries = new Counter({
  name: 'switchyard_event_deliveries_total',
  help: 'Event calls to trigger URLs, by outcome (sent: a 2xx answer, failed: another answer or none, dropped: over the onEdit window).',
  labelNames: ['outcome'] as const,
  registers,
});

export const outboxPending = sampledGauge({
  name: 'switchyard_event_outbox_pending',
  help: 'Event calls pending delivery in the store (all processes; counted up to 100000, refreshed at most every 2 s).',
});

export const outboxLag = sampledGauge({
  name: 'switchyard_event_outbox_lag_seconds',
  help: 'Age of the oldest event call pending delivery (0 with none; refreshed at most every 2 s).',
});

// ---- Queues (src/queues) ----

export const csvRowsRead = new Counter({
  name: 'switchyard_csv_rows_read_total',
  help: 'CSV batch rows read by the loader of this process (loaded + skipped).',
  registers,
});

export const csvRowsLoaded = new Counter({
  name: 'switchyard_csv_rows_loaded_total',
  help: 'CSV batch rows loaded as queue items by this process.',
  registers,
});

export const csvRowsSkipped = new Counter({
  name: 'switchyard_csv_rows_skipped_total',
  help: 'CSV batch rows skipped (recorded as row errors) by this process.',
  registers,
});

export const queueBatches = sampledGauge({
  name: 'switchyard_queue_batches',
  help: 'CSV batches not finished yet in the store, by state (validating, pending, running; refreshed at most every 2 s).',
  labelNames: ['state'] as const,
});

// ---- Browser (src/browser) ----

export const browserTasks = new Counter({
  name: 'switchyard_browser_tasks_total',
  help: 'Browser tasks finished in this process, by outcome (completed, failed, timeout).',
  labelNames: ['outcome'] as const,
  registers,
});

export const browserPool = sampledGauge({
  name: 'switchyard_browser_pool',
  help: 'The browser pool of this process: running Chromium browsers, task slots in use (BROWSER_MAX_CONTEXTS bounds them) and tasks waiting for one or for room in the memory budget.',
  labelNames: ['state'] as const,
});

// ---- Code sandbox and the tenant memory budget (src/engine/sandbox, src/containment) ----

export const sandboxRunnerStart = new Histogram({
  name: 'switchyard_sandbox_runner_start_seconds',
  help: 'Code runner process starts, from spawn to the runner reporting ready and its user checked (most start as spares, off the path of any step).',
  buckets: [0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2.5, 5, 10],
  registers,
});

export const sandboxRunners = sampledGauge({
  name: 'switchyard_sandbox_runners',
  help: 'Code runner processes of this process by state: spare (warm, bound to no organisation), idle, busy, starting; and waiting: code steps waiting for a runner.',
  labelNames: ['state'] as const,
});

export const tenantMemory = sampledGauge({
  name: 'switchyard_tenant_memory_bytes',
  help: 'The memory budget of code runners and browser boxes (TENANT_MEMORY_MB): its total, and the memory its members use as last measured (or expected until measured).',
  labelNames: ['state'] as const,
});

export const tenantMemoryEvictions = new Counter({
  name: 'switchyard_tenant_memory_evictions_total',
  help: 'Idle code runners and browser boxes stopped to make room in the tenant memory budget.',
  registers,
});

// ---- Agents (src/agents) ----

export const agentTurns = new Counter({
  name: 'switchyard_agent_turns_total',
  help: 'Agent turns finished in this process, by outcome (completed, or the failure code: step_limit, model_error, invalid_output, turn_timeout, turn_cancelled, internal_error).',
  labelNames: ['outcome'] as const,
  registers,
});

export const modelDuration = new Histogram({
  name: 'switchyard_agent_model_request_duration_seconds',
  help: 'Model provider requests of agent turns (one per model step; streamed: to the end of the stream), by provider and outcome (ok, error).',
  labelNames: ['provider', 'outcome'] as const,
  buckets: MODEL,
  registers,
});

// ---- Helpers ----

/** The status class label of an HTTP status: `2xx` … `5xx`. */
export function statusClass(status: number): string {
  return status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : 'other';
}

/** Trigger kinds as runs record them (`started_by`); anything else is `other`. */
const TRIGGER_KINDS = new Set<string>(['api_trigger', 'webhook_trigger', 'queue_batch']);

export function triggerKind(startedBy: string | null | undefined): string {
  if (startedBy === null || startedBy === undefined) return 'api_trigger';
  return TRIGGER_KINDS.has(startedBy) ? startedBy : 'other';
}

/** Seconds since `startMs` (a `performance.now()` reading). */
export function secondsSince(startMs: number): number {
  return (performance.now() - startMs) / 1000;
}

/**
 * Label children by their values, made once: prom-client's `labels()` builds a child per call.
 * For metrics whose label values come from a small fixed set.
 */
export function children<C>(make: (...values: string[]) => C): (...values: string[]) => C {
  const made = new Map<string, C>();
  return (...values) => {
    const key = values.join('\u0000');
    let child = made.get(key);
    if (child === undefined) {
      child = make(...values);
      made.set(key, child);
    }
    return child;
  };
}

/**
 * Has `sample` set `gauge`'s values when it is scraped (a pool's size, the store's backlog);
 * `gauge` is one made by `sampledGauge`. Returns the function that stops it. A sampler that
 * fails keeps the gauge's last values: a scrape never fails because one source did.
 */
export function sampleOnScrape(gauge: Gauge, sample: Sampler): () => void {
  const set = samplers.get(gauge);
  if (!set) throw new Error('sampleOnScrape: this gauge is not sampled at scrape time');
  set.add(sample);
  return () => set.delete(sample);
}

/**
 * `load` at most once per `ttlMs`, concurrent callers sharing one call: store queries behind
 * gauges, so that frequent scrapes cost the store one cheap query every few seconds.
 */
export function cachedFor<T>(ttlMs: number, load: () => Promise<T>): () => Promise<T> {
  let at = -Infinity;
  let last: Promise<T> | undefined;
  return () => {
    const now = performance.now();
    if (last && now - at < ttlMs) return last;
    at = now;
    last = load();
    // A failure is not kept: the next scrape asks again.
    last.catch(() => {
      at = -Infinity;
    });
    return last;
  };
}

/**
 * prom-client's gauges named like counters (`promtool check metrics` rejects a gauge ending in
 * `_total`): each is the sum over `type` of the gauge of the same name without `_total`
 * (`sum(nodejs_active_handles)`), which stays.
 */
const MISNAMED_DEFAULTS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

let defaults = false;

/**
 * Node's default process metrics (CPU, memory, event loop lag, GC, handles) in the registry:
 * turned on by the metrics listener only, so a process without METRICS_PORT runs none of
 * their observers.
 */
export function collectProcessMetrics(): void {
  if (defaults) return;
  defaults = true;
  collectDefaultMetrics({ register: registry });
  for (const name of MISNAMED_DEFAULTS) registry.removeSingleMetric(name);
}

/** Label values known in advance: their series exist at 0 from the first scrape. */
function zeroes(counter: Counter<string>, ...sets: (readonly string[])[]): void {
  const combine = (prefix: string[], rest: (readonly string[])[]): void => {
    if (rest.length === 0) {
      counter.labels(...prefix).inc(0);
      return;
    }
    for (const v of rest[0]!) combine([...prefix, v], rest.slice(1));
  };
  combine([], sets);
}

const TRIGGERS = ['api_trigger', 'webhook_trigger', 'queue_batch'] as const;
zeroes(runsStarted, TRIGGERS);
zeroes(runsFinished, ['COMPLETE', 'FAILED', 'TIMEOUT'], TRIGGERS);
zeroes(runsRecovered, ['requeued', 'failed']);
zeroes(eventDeliveries, ['sent', 'failed', 'dropped']);
zeroes(browserTasks, ['completed', 'failed', 'timeout']);
zeroes(agentTurns, [
  'completed',
  'step_limit',
  'model_error',
  'invalid_output',
  'turn_timeout',
  'turn_cancelled',
  'internal_error',
]);
