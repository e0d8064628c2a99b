/**
 * The metric definitions (src/kernel/metrics.ts): Prometheus naming conventions, labels that
 * can never carry an id or a tenant's name (bounded cardinality), sensible histogram buckets,
 * and the helpers behind the gauges read at scrape time.
 */
import { expect } from 'chai';
import type { Counter, Gauge, Histogram } from 'prom-client';
import {
  cachedFor,
  registry,
  runsPending,
  sampleOnScrape,
  statusClass,
  syncCallersWaiting,
  triggerKind,
} from '../../../src/kernel/metrics.js';

type AnyMetric = (Counter | Gauge | Histogram) & {
  name: string;
  help: string;
  labelNames: string[];
  upperBounds?: number[];
};

const ours = (): { type: string; metric: AnyMetric }[] =>
  registry
    .getMetricsAsArray()
    .map((m) => m as unknown as AnyMetric & { type: string })
    .filter((m) => m.name.startsWith('switchyard_'))
    .map((m) => ({ type: String((m as unknown as { type: string }).type), metric: m }));

/** Every label name in use; each one's values come from a fixed set (see the README table). */
const LABELS = ['operation', 'status_class', 'trigger', 'status', 'outcome', 'server', 'method', 'state', 'provider'];

describe('kernel/metrics', () => {
  it('names follow the Prometheus conventions, with HELP on each', () => {
    const metrics = ours();
    expect(metrics.length).to.be.at.least(25);
    for (const { type, metric } of metrics) {
      expect(metric.name, metric.name).to.match(/^switchyard_[a-z][a-z0-9_]*[a-z0-9]$/);
      expect(metric.help.length, `${metric.name} HELP`).to.be.greaterThan(20);
      if (type === 'counter') expect(metric.name, 'a counter ends in _total').to.match(/_total$/);
      else expect(metric.name, 'only counters end in _total').not.to.match(/_total$/);
      if (type === 'histogram') expect(metric.name, 'durations in seconds').to.match(/_seconds$/);
      expect(metric.name, 'base units only').not.to.match(/_(ms|milliseconds|minutes|kb|mb|percent)(_|$)/);
    }
    expect(metrics.map((m) => m.type)).to.include.members(['counter', 'gauge', 'histogram']);
  });

  it('no label is named like an id or a tenant-chosen name; each is one of the known few', () => {
    for (const { metric } of ours()) {
      for (const label of metric.labelNames) {
        expect(label, `${metric.name}{${label}}`).not.to.match(
          /(^|_)(id|ids|org|organi[sz]ation|run|user|workflow|automation|connection|tenant|name|path|url|key|email|tool|model|queue|collection|agent|chat)(_|$)/,
        );
        expect(LABELS, `${metric.name}{${label}}`).to.include(label);
      }
    }
  });

  it('pre-set series carry only fixed label values', async () => {
    const json = await registry.getMetricsAsJSON();
    for (const m of json.filter((x) => x.name.startsWith('switchyard_'))) {
      for (const v of m.values) {
        for (const value of Object.values(v.labels)) expect(String(value), m.name).to.match(/^[a-zA-Z0-9_.+/-]{1,40}$/);
        expect(JSON.stringify(v.labels)).not.to.match(/(org|run|usr|wf|conn|key)_[0-9a-f]{8}/);
      }
    }
  });

  it('histogram buckets rise strictly, in seconds, from milliseconds to the longest wait', () => {
    const histograms = ours().filter((m) => m.type === 'histogram');
    expect(histograms.length).to.be.at.least(5);
    for (const { metric } of histograms) {
      const b = metric.upperBounds!;
      expect(b.length, metric.name).to.be.within(8, 20);
      for (let i = 1; i < b.length; i++) expect(b[i]!, metric.name).to.be.greaterThan(b[i - 1]!);
      expect(b[0]!, `${metric.name} starts small`).to.be.within(0.0005, 0.1);
      expect(b[b.length - 1]!, `${metric.name} ends at a long wait, not in milliseconds`).to.be.within(10, 600);
    }
  });

  it('status classes and trigger kinds map onto fixed values', () => {
    expect([200, 204, 302, 404, 499, 503, 99, 600].map(statusClass)).to.deep.equal([
      '2xx',
      '2xx',
      '3xx',
      '4xx',
      '4xx',
      '5xx',
      'other',
      'other',
    ]);
    expect(['api_trigger', 'webhook_trigger', 'queue_batch', null, 'my-own-name'].map(triggerKind)).to.deep.equal([
      'api_trigger',
      'webhook_trigger',
      'queue_batch',
      'api_trigger',
      'other',
    ]);
  });

  it('cachedFor: one load per TTL, shared by concurrent callers; a failure is not kept', async () => {
    let loads = 0;
    let fail = false;
    const get = cachedFor(60, async () => {
      loads++;
      await new Promise((r) => setTimeout(r, 5));
      if (fail) throw new Error('store down');
      return loads;
    });
    expect(await Promise.all([get(), get(), get()])).to.deep.equal([1, 1, 1]);
    expect(await get()).to.equal(1);
    await new Promise((r) => setTimeout(r, 70));
    fail = true;
    await get().then(
      () => expect.fail('the failing load must reject'),
      (err: Error) => expect(err.message).to.equal('store down'),
    );
    fail = false;
    expect(await get(), 'asked again at once after a failure').to.equal(3);
  });

  it('sampleOnScrape: gauges are set at scrape time; a failing sampler keeps the last value; stop removes it', async () => {
    let value = 7;
    const stop = sampleOnScrape(runsPending, async () => {
      if (value < 0) throw new Error('store down');
      runsPending.set(value);
    });
    const read = async () => (await runsPending.get()).values[0]!.value;
    try {
      expect(await read()).to.equal(7);
      value = 9;
      expect(await read()).to.equal(9);
      value = -1;
      expect(await read(), 'last value stands').to.equal(9);
      expect(await registry.metrics()).to.include('switchyard_runs_pending 9');
    } finally {
      stop();
    }
    value = 11;
    expect(await read(), 'stopped: no longer sampled').to.equal(9);
    expect(() => sampleOnScrape(syncCallersWaiting, () => undefined)).to.throw(/not sampled/);
  });
});
