/**
 * Public URLs of a trigger (spec endpoints 1 and 2). The webhook form is a template: the
 * caller substitutes one of the organisation's API keys for `{apiKey}`; the key itself is
 * never stored with the trigger nor returned by the management API.
 */
import type { TriggerRecord } from './triggers.js';

export interface TriggerView extends TriggerRecord {
  urls: { trigger: string };
}

export function triggerUrl(triggersBaseUrl: string, t: Pick<TriggerRecord, 'kind' | 'triggerId'>): string {
  const base = triggersBaseUrl.replace(/\/+$/, '');
  const id = encodeURIComponent(t.triggerId);
  return t.kind === 'api' ? `${base}/ext/triggers/${id}` : `${base}/ext/webhook/{apiKey}/triggers/${id}`;
}

export function triggerView(triggersBaseUrl: string, t: TriggerRecord): TriggerView {
  return { ...t, urls: { trigger: triggerUrl(triggersBaseUrl, t) } };
}
