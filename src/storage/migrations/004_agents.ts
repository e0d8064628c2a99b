import type { Knex } from 'knex';

/**
 * Agents and their chats (spec section 11 "Agent management", "Agent API channel"):
 * - agents: the editable draft; agent_releases: immutable numbered snapshots.
 * - chats: a conversation with one agent; `channel_id` is set when an API channel started it
 *   (only that channel may continue it: 403 unowned_chat_id otherwise).
 * - chat_messages: the history as the model sees it (user, assistant with tool calls, tool
 *   results), one row per message in `seq` order; a reset deletes the rows and keeps the chat.
 * - agent_turns: one user message and its reply; its id is the channel's X-Pf-Run-Id and the
 *   key of Idempotency-Key replays.
 * - agent_channels: an API channel of one agent; its id is the channel trigger id.
 * - chat_files: files produced in a chat (tool results carrying images or embedded resources).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('agents', (t) => {
    t.string('id', 64).primary();
    t.string('org_id', 64).notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('name', 200).notNullable();
    t.text('description').notNullable();
    t.text('instructions').notNullable();
    t.text('servers').notNullable(); // JSON [{server, tools?}]
    t.string('model', 200);
    t.text('output_schema'); // JSON
    t.text('intro_message');
    t.boolean('is_public_template').notNullable().defaultTo(false);
    t.integer('version').notNullable();
    t.integer('release_version');
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
    t.index(['org_id', 'id']);
  });

  await db.schema.createTable('agent_releases', (t) => {
    t.string('agent_id', 64).notNullable().references('agents.id').onDelete('CASCADE');
    t.integer('release_version').notNullable();
    t.string('org_id', 64).notNullable();
    t.integer('draft_version').notNullable();
    t.text('snapshot').notNullable(); // JSON of the agent's configuration at publication
    t.text('notes');
    t.string('published_at', 32).notNullable();
    t.primary(['agent_id', 'release_version']);
  });

  await db.schema.createTable('agent_channels', (t) => {
    t.string('id', 64).primary();
    t.string('org_id', 64).notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('agent_id', 64).notNullable().references('agents.id').onDelete('CASCADE');
    t.string('name', 200).notNullable();
    t.string('key_hash', 128).notNullable().unique();
    t.string('key_hint', 16).notNullable();
    t.string('output_format', 16).notNullable(); // text | markdown | json
    t.boolean('enabled').notNullable().defaultTo(true);
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
    t.index(['org_id', 'id']);
    t.index(['agent_id']);
  });

  await db.schema.createTable('chats', (t) => {
    t.string('id', 64).primary();
    t.string('org_id', 64).notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('agent_id', 64).notNullable().references('agents.id').onDelete('CASCADE');
    t.string('channel_id', 64);
    t.string('title', 200);
    t.string('created_at', 32).notNullable();
    t.string('updated_at', 32).notNullable();
    t.index(['org_id', 'id']);
    t.index(['org_id', 'agent_id', 'id']);
  });

  await db.schema.createTable('chat_messages', (t) => {
    t.string('chat_id', 64).notNullable().references('chats.id').onDelete('CASCADE');
    t.integer('seq').notNullable();
    t.string('org_id', 64).notNullable();
    t.string('turn_id', 64).notNullable();
    t.string('role', 16).notNullable(); // user | assistant | tool
    t.text('message').notNullable(); // JSON ModelMessage (AI SDK)
    t.string('created_at', 32).notNullable();
    t.primary(['chat_id', 'seq']);
  });

  await db.schema.createTable('agent_turns', (t) => {
    t.string('id', 64).primary();
    t.string('org_id', 64).notNullable();
    t.string('chat_id', 64).notNullable().references('chats.id').onDelete('CASCADE');
    t.string('agent_id', 64).notNullable();
    t.string('channel_id', 64);
    t.string('idem_key', 255);
    t.string('status', 16).notNullable(); // RUNNING | COMPLETE | FAILED
    t.text('reply'); // reply text (JSON text for structured output)
    t.text('output'); // JSON structured output
    t.text('error'); // JSON {error, message}
    t.string('created_at', 32).notNullable();
    t.string('finished_at', 32);
    t.index(['chat_id', 'id']);
    t.unique(['channel_id', 'idem_key']);
  });

  // The file itself is a `files` row (kind chat), downloadable by signed URL like run files.
  await db.schema.createTable('chat_files', (t) => {
    t.string('file_id', 64).primary();
    t.string('org_id', 64).notNullable();
    t.string('chat_id', 64).notNullable().references('chats.id').onDelete('CASCADE');
    t.string('turn_id', 64).notNullable();
    t.string('created_at', 32).notNullable();
    t.index(['chat_id', 'file_id']);
  });
}

export async function down(db: Knex): Promise<void> {
  for (const table of [
    'chat_files',
    'agent_turns',
    'chat_messages',
    'chats',
    'agent_channels',
    'agent_releases',
    'agents',
  ]) {
    await db.schema.dropTableIfExists(table);
  }
}
