/**
 * `switchyard queue …`: workflow queues (spec section 15) at a terminal, on the store
 * directly like the other verbs: create, list, show, update, pause, resume, delete, and the
 * reads of their items, batches and skipped rows. `queue upload` (src/cli/queue-upload.ts)
 * is the one verb that talks to a running service, because batches are loaded and
 * dispatched there. Output is JSON.
 */
import type { Command } from 'commander';
import type { Knex } from 'knex';
import { AppError } from '../errors/index.js';
import { openBlobStore } from '../kernel/blobs.js';
import { findTrigger } from '../triggers/index.js';
import {
  checkQueueSettings,
  createQueue,
  deleteQueue,
  findQueue,
  listQueues,
  queueView,
  updateQueue,
  type QueuePatch,
  type QueueRecord,
  findBatch,
  listBatches,
  listRowErrors,
  ITEM_STATUSES,
  listQueueItems,
  type ItemStatus,
} from '../queues/index.js';
import type { CliKit } from './agents.js';
import { registerQueueUpload } from './queue-upload.js';

/** The settings flags of `create` and `update`, as commander parses them (numbers still text). */
interface SettingsFlags {
  name?: string;
  description?: string;
  trigger?: string;
  concurrency?: string;
  priority?: string;
  maxRetries?: string;
  paused?: boolean;
}

interface PageFlags {
  limit?: string;
  cursor?: string;
}

function integer(kit: CliKit, flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^-?[0-9]+$/.test(value.trim())) throw kit.fail(`${flag} must be an integer`);
  return Number(value);
}

/** The flags as a queue patch, checked with the bounds of openapi/management.yaml QueueCreate. */
function settings(kit: CliKit, o: SettingsFlags): QueuePatch {
  const patch: QueuePatch = {
    name: o.name,
    description: o.description,
    triggerId: o.trigger,
    paused: o.paused,
    concurrencyLimit: integer(kit, '--concurrency', o.concurrency),
    priority: integer(kit, '--priority', o.priority),
    maxRetries: integer(kit, '--max-retries', o.maxRetries),
  };
  try {
    checkQueueSettings(patch);
  } catch (err) {
    // The HTTP field names, which the bounds' messages use, next to the flags they come from.
    if (err instanceof AppError)
      throw kit.fail(
        `invalid queue settings: ${err.message} (--concurrency sets concurrencyLimit, --max-retries maxRetries)`,
      );
    throw err;
  }
  return patch;
}

function page(kit: CliKit, o: PageFlags): { limit: number | undefined; cursor: string | undefined } {
  return { limit: integer(kit, '--limit', o.limit), cursor: o.cursor };
}

/** Same rule as createQueue over HTTP: an API or webhook trigger of a workflow in the organisation. */
async function checkTrigger(kit: CliKit, db: Knex, orgId: string, triggerId: string): Promise<void> {
  if (!(await findTrigger(db, orgId, triggerId)))
    throw kit.fail(`no API or webhook trigger ${triggerId} in this organisation (a queue needs a workflow trigger)`);
}

async function requireQueue(kit: CliKit, db: Knex, orgId: string, queueId: string): Promise<QueueRecord> {
  const q = await findQueue(db, orgId, queueId);
  if (!q) throw kit.fail(`no queue ${queueId}`);
  return q;
}

function withSettingsOptions(cmd: Command): Command {
  return cmd
    .option('--description <text>')
    .option('--concurrency <n>', 'most runs in flight at once, 1 to 1000 (default 5)')
    .option('--priority <n>', 'dispatch order between queues, 1 to 10, 10 first (default 5)')
    .option('--max-retries <n>', 'restarts of a row whose run failed, 0 to 3 (default 0)');
}

export function registerQueueCommands(program: Command, kit: CliKit): void {
  const queue = program
    .command('queue')
    .description(
      'workflow queues (spec section 15): create, list, show, update, pause, resume, delete, items, batches, row-errors, upload',
    );

  withSettingsOptions(
    queue
      .command('create')
      .requiredOption('--name <name>')
      .requiredOption('--trigger <triggerId>', 'API or webhook trigger the rows run through'),
  )
    .option('--paused', 'create it paused: batches load, no run starts until resumed')
    .addOption(kit.orgOption())
    .action((o: SettingsFlags & { name: string; trigger: string; org?: string }) =>
      kit.withStore(async ({ db }) => {
        const orgId = await kit.resolveOrg(db, o.org);
        const s = settings(kit, o);
        await checkTrigger(kit, db, orgId, o.trigger);
        kit.print(queueView(await createQueue(db, orgId, { ...s, name: o.name, triggerId: o.trigger })));
      }),
    );

  queue
    .command('list')
    .option('--limit <n>', '1 to 200 (default 50)')
    .option('--cursor <cursor>', 'nextCursor of the previous page')
    .addOption(kit.orgOption())
    .action((o: PageFlags & { org?: string }) =>
      kit.withStore(async ({ db }) => {
        const result = await listQueues(db, await kit.resolveOrg(db, o.org), page(kit, o));
        kit.print({ items: result.items.map(queueView), nextCursor: result.nextCursor });
      }),
    );

  queue
    .command('show <queueId>')
    .addOption(kit.orgOption())
    .action((id: string, o: { org?: string }) =>
      kit.withStore(async ({ db }) =>
        kit.print(queueView(await requireQueue(kit, db, await kit.resolveOrg(db, o.org), id))),
      ),
    );

  withSettingsOptions(
    queue
      .command('update <queueId>')
      .description('change any setting; runs in flight are not touched')
      .option('--name <name>')
      .option('--trigger <triggerId>'),
  )
    .option('--paused', 'pause: runs in flight finish, no new run starts')
    .option('--no-paused', 'resume')
    .addOption(kit.orgOption())
    .action((id: string, o: SettingsFlags & { org?: string }) =>
      kit.withStore(async ({ db }) => {
        const orgId = await kit.resolveOrg(db, o.org);
        const patch = settings(kit, o);
        if (Object.values(patch).every((v) => v === undefined))
          throw kit.fail('nothing to change: pass at least one option');
        await requireQueue(kit, db, orgId, id);
        if (patch.triggerId !== undefined) await checkTrigger(kit, db, orgId, patch.triggerId);
        // No If-Match at a terminal: the last writer wins, as with the other store verbs.
        kit.print(queueView(await updateQueue(db, orgId, id, { expectedVersion: undefined, patch })));
      }),
    );

  for (const [verb, paused] of [
    ['pause', true],
    ['resume', false],
  ] as const) {
    queue
      .command(`${verb} <queueId>`)
      .description(paused ? 'start no new run; runs in flight finish' : 'start runs again')
      .addOption(kit.orgOption())
      .action((id: string, o: { org?: string }) =>
        kit.withStore(async ({ db }) => {
          const orgId = await kit.resolveOrg(db, o.org);
          await requireQueue(kit, db, orgId, id);
          kit.print(queueView(await updateQueue(db, orgId, id, { expectedVersion: undefined, patch: { paused } })));
        }),
      );
  }

  queue
    .command('delete <queueId>')
    .description('delete the queue with its uploads, batches, items and row errors; its runs stay')
    .addOption(kit.orgOption())
    .action((id: string, o: { org?: string }) =>
      kit.withStore(async ({ db, config }) => {
        const blobKeys = await deleteQueue(db, await kit.resolveOrg(db, o.org), id, undefined);
        if (!blobKeys) throw kit.fail(`no queue ${id}`);
        const blobs = openBlobStore(config);
        for (const key of blobKeys) await blobs.delete(key);
        kit.print({ queueId: id, deleted: true });
      }),
    );

  queue
    .command('items <queueId>')
    .description("the queue's loaded rows in load order, with their status and run")
    .option('--batch <batchId>', 'only the rows of this batch')
    .option('--status <status>', `only rows in this status: ${ITEM_STATUSES.join(', ')}`)
    .option('--limit <n>', '1 to 200 (default 50)')
    .option('--cursor <cursor>', 'nextCursor of the previous page')
    .addOption(kit.orgOption())
    .action((id: string, o: PageFlags & { batch?: string; status?: string; org?: string }) =>
      kit.withStore(async ({ db, config }) => {
        if (o.status !== undefined && !(ITEM_STATUSES as readonly string[]).includes(o.status))
          throw kit.fail(`--status must be one of ${ITEM_STATUSES.join(', ')}`);
        const q = await requireQueue(kit, db, await kit.resolveOrg(db, o.org), id);
        kit.print(
          await listQueueItems(db, openBlobStore(config), q.id, {
            filter: { batchId: o.batch, status: o.status as ItemStatus | undefined },
            page: page(kit, o),
          }),
        );
      }),
    );

  queue
    .command('batches <queueId>')
    .description("the queue's CSV batches, oldest first, with their counters")
    .option('--limit <n>', '1 to 200 (default 50)')
    .option('--cursor <cursor>', 'nextCursor of the previous page')
    .addOption(kit.orgOption())
    .action((id: string, o: PageFlags & { org?: string }) =>
      kit.withStore(async ({ db }) => {
        const orgId = await kit.resolveOrg(db, o.org);
        const q = await requireQueue(kit, db, orgId, id);
        kit.print(await listBatches(db, orgId, q.id, page(kit, o)));
      }),
    );

  queue
    .command('row-errors <batchId>')
    .description('the rows of a batch skipped while loading, by row number')
    .requiredOption('--queue <queueId>', 'the queue of the batch')
    .option('--limit <n>', '1 to 1000 (default 100)')
    .option('--cursor <cursor>', 'nextCursor of the previous page')
    .addOption(kit.orgOption())
    .action((batchId: string, o: PageFlags & { queue: string; org?: string }) =>
      kit.withStore(async ({ db }) => {
        const orgId = await kit.resolveOrg(db, o.org);
        await requireQueue(kit, db, orgId, o.queue);
        if (!(await findBatch(db, orgId, o.queue, batchId))) throw kit.fail(`no batch ${batchId} in queue ${o.queue}`);
        kit.print(await listRowErrors(db, batchId, page(kit, o)));
      }),
    );

  registerQueueUpload(queue, kit);
}
