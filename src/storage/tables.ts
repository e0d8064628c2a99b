/**
 * Who owns each table of the store (DESIGN.md section 3: each table has one owning context).
 * Only the owner's files name the table in SQL; every other context reads and writes it through
 * the owner's index.ts, so the owner's writes keep its caches true. Each context's README lists
 * the tables it owns. `scripts/check-table-owners.ts` (run by `npm run lint` and
 * test/unit/architecture/table-owners.test.ts) fails when a file of one context names a table
 * of another in a query builder call or a raw SQL string. The migrations under
 * storage/migrations create every table and are exempt.
 *
 * The keys are context folders under src/ (`servers/<name>` for an embedded server).
 */
export const TABLE_OWNERS = {
  auth: ['organizations', 'credentials', 'signing_keys', 'api_keys'],
  engine: ['workflows', 'workflow_versions'],
  triggers: ['triggers'],
  files: ['files'],
  runs: ['runs', 'run_steps', 'idempotency_keys'],
  connections: ['connections'],
  gateway: ['app_servers'],
  agents: ['agents', 'agent_releases', 'agent_channels', 'chats', 'chat_messages', 'agent_turns', 'chat_files'],
  events: ['collections', 'collection_items', 'event_outbox'],
  queues: ['queues', 'csv_uploads', 'queue_batches', 'queue_items', 'batch_row_errors'],
  browser: ['browser_tasks', 'browser_logins', 'browser_action_cache'],
  'servers/sidekick': ['discovery_embeddings', 'discovery_usage'],
} as const satisfies Record<string, readonly string[]>;

export type OwningContext = keyof typeof TABLE_OWNERS;
export type TableName = (typeof TABLE_OWNERS)[OwningContext][number];

/** The owning context of each table. */
export const OWNER_OF: ReadonlyMap<string, OwningContext> = new Map(
  (Object.entries(TABLE_OWNERS) as [OwningContext, readonly string[]][]).flatMap(([context, tables]) =>
    tables.map((table) => [table, context] as const),
  ),
);
