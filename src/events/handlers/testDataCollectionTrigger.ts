import type { Handler } from '../../services.js';
import { sampleFile } from '../files.js';
import { sampleItem } from '../items.js';
import { filePayload, itemPayload } from '../payloads.js';
import { revealKey } from '../trigger-urls.js';
import { holdsFiles } from '../types.js';
import { resourceCollection } from './support.js';

/**
 * POST /datacollection/{collectionId}/triggers/test — a synthetic payload of the collection's
 * type with testData merged over it, sent to every collection-level URL of the event, at once
 * and outside the onEdit window (openapi/resources.yaml).
 */
export const testDataCollectionTrigger: Handler<'testDataCollectionTrigger'> = async (req, ctx) => {
  const collection = await resourceCollection(ctx, req.params.collectionId);
  const { event, testData } = req.body;
  const { events } = ctx.services;
  const targets = collection.triggerUrls.filter((t) => t.event === event);
  const results = await Promise.all(
    targets.map(async (t) => {
      const base = holdsFiles(collection.type)
        ? filePayload(event, collection, sampleFile({}), 'collection')
        : itemPayload(event, collection, sampleItem({}), {
            level: 'collection',
            previous: { content: {}, metadata: {} },
          });
      const payload = { eventId: 'evt_test', ...base, ...testData };
      const r = await events.call(collection.orgId, t.url, revealKey(events.deps.secretKey, t.apiKeyEnc), payload);
      return {
        url: t.url,
        status: r.ok ? ('success' as const) : ('failed' as const),
        ...(r.httpStatus !== null ? { httpStatus: r.httpStatus } : {}),
        ...(r.runId !== null ? { runId: r.runId } : {}),
        ...(r.error !== null ? { error: r.error } : {}),
      };
    }),
  );
  const ok = results.filter((r) => r.status === 'success').length;
  const message =
    targets.length === 0
      ? `No trigger URL is configured for ${event}.`
      : `Called ${targets.length} trigger URL${targets.length === 1 ? '' : 's'} for ${event}; ${ok} succeeded, ${targets.length - ok} failed.`;
  return { status: 200, body: { message, results } };
};
