import type { Knex } from 'knex';
import * as m001 from './001_initial.js';
import * as m002 from './002_run_execution.js';
import * as m003 from './003_lean_run_indexes.js';
import * as m004 from './004_agents.js';
import * as m005 from './005_collections.js';
import * as m006 from './006_queues.js';
import * as m007 from './007_browser_tasks.js';
import * as m008 from './008_browser_action_cache.js';
import * as m009 from './009_discovery_embeddings.js';
import * as m010 from './010_discovery_usage.js';
import * as m011 from './011_run_trace_parent.js';
import * as m012 from './012_event_and_batch_trace_parent.js';
import * as m013 from './013_run_trace_link.js';
import * as m014 from './014_run_listing_indexes.js';
import * as m015 from './015_run_listing_lean.js';

export interface Migration {
  name: string;
  up: (db: Knex) => Promise<void>;
  down: (db: Knex) => Promise<void>;
}

/** Ordered list of migrations, applied in this order; a new migration goes at the end. */
export const migrations: Migration[] = [
  { name: '001_initial', ...m001 },
  { name: '002_run_execution', ...m002 },
  { name: '003_lean_run_indexes', ...m003 },
  { name: '004_agents', ...m004 },
  { name: '005_collections', ...m005 },
  { name: '006_queues', ...m006 },
  { name: '007_browser_tasks', ...m007 },
  { name: '008_browser_action_cache', ...m008 },
  { name: '009_discovery_embeddings', ...m009 },
  { name: '010_discovery_usage', ...m010 },
  { name: '011_run_trace_parent', ...m011 },
  { name: '012_event_and_batch_trace_parent', ...m012 },
  { name: '013_run_trace_link', ...m013 },
  { name: '014_run_listing_indexes', ...m014 },
  { name: '015_run_listing_lean', ...m015 },
];
