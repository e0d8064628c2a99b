import type { Handler } from '../../services.js';
import { AppError } from '../../errors/index.js';
import { sampleItem } from '../items.js';
import { itemPayload } from '../payloads.js';
import { normalizeTriggerUrls } from '../trigger-urls.js';
import { holdsFiles } from '../types.js';
import { resourceCollection } from './support.js';

/** POST /memory/test-trigger?collectionId= — one synchronous onTest call with `data` as content (spec section 14). */
export const testMemoryTrigger: Handler<'testMemoryTrigger'> = async (req, ctx) => {
  const { url, apiKey, dataStoreId, data } = req.body;
  if (dataStoreId !== req.query.collectionId) throw new AppError('ERR_COLLECTION_MISMATCH');
  const collection = await resourceCollection(ctx, req.query.collectionId);
  if (holdsFiles(collection.type))
    throw new AppError('ERR_COLLECTION_TYPE_MISMATCH', {
      message: `This collection is a ${collection.type.replace('_', ' ')}; test its trigger URLs with /datacollection/{collectionId}/triggers/test.`,
    });
  const { events } = ctx.services;
  // The same URL checks as a stored entry (scheme, credentials, outbound policy).
  normalizeTriggerUrls([{ event: 'onEdit', url, apiKey }], {
    level: 'collection',
    collectionType: collection.type,
    secretKey: events.deps.secretKey,
    addresses: events.deps.addresses,
  });
  const payload = {
    eventId: 'evt_test',
    ...itemPayload('onTest', collection, { ...sampleItem({}), content: data }, { level: 'collection' }),
  };
  const r = await events.call(collection.orgId, url, apiKey, payload);
  return {
    status: 200,
    body: {
      message: r.ok ? 'Trigger URL called successfully.' : 'Trigger URL call failed.',
      log: {
        runId: r.runId,
        status: r.ok ? 'success' : 'failed',
        executionTime: r.durationMs,
        event: 'onTest',
        ...(r.error !== null ? { error: r.error } : {}),
      },
    },
  };
};
