/**
 * Synthetic but realistic tool catalogue for the discovery latency bench: made-up products in
 * common SaaS categories, each with tools named the way MCP servers name them
 * (`<product>_<verb>_<entity>`, sometimes `<product>_<entity>_<verb>`), descriptions from a
 * few phrasings and input schemas with a PCID. Deterministic (seeded), so runs compare.
 */
import type { CatalogTool, JsonSchemaObject } from '../src/gateway/types.js';
import { prng } from './lib.js';

const CATEGORIES: Record<string, { about: string; entities: string[] }> = {
  crm: {
    about: 'Customer relationship management',
    entities: ['contact', 'company', 'deal', 'lead', 'note', 'pipeline', 'activity', 'owner'],
  },
  helpdesk: {
    about: 'Customer support help desk',
    entities: ['ticket', 'customer', 'agent', 'macro', 'article', 'satisfaction rating', 'tag', 'view'],
  },
  billing: {
    about: 'Subscription billing and payments',
    entities: ['invoice', 'customer', 'subscription', 'payment', 'refund', 'coupon', 'plan', 'credit note'],
  },
  storage: {
    about: 'Cloud file storage and sharing',
    entities: ['file', 'folder', 'shared link', 'permission', 'revision', 'comment'],
  },
  chat: {
    about: 'Team chat and messaging',
    entities: ['message', 'channel', 'thread', 'reaction', 'user', 'reminder', 'file'],
  },
  projects: {
    about: 'Project and task management',
    entities: ['task', 'project', 'milestone', 'comment', 'board', 'sprint', 'label', 'time entry'],
  },
  ecommerce: {
    about: 'Online store management',
    entities: ['product', 'order', 'customer', 'inventory level', 'discount', 'fulfillment', 'collection', 'review'],
  },
  calendar: {
    about: 'Scheduling and calendars',
    entities: ['event', 'calendar', 'availability', 'booking', 'attendee', 'reminder'],
  },
  hr: {
    about: 'Human resources and people operations',
    entities: ['employee', 'time off request', 'department', 'candidate', 'job posting', 'review', 'payroll run'],
  },
  marketing: {
    about: 'Email marketing automation',
    entities: ['campaign', 'subscriber', 'audience', 'segment', 'template', 'automation', 'report'],
  },
  accounting: {
    about: 'Accounting and bookkeeping',
    entities: ['invoice', 'bill', 'expense', 'vendor', 'account', 'journal entry', 'report', 'tax rate'],
  },
  devops: {
    about: 'Code hosting and CI/CD',
    entities: ['repository', 'pull request', 'pipeline', 'build', 'deployment', 'issue', 'branch', 'release'],
  },
  forms: {
    about: 'Online forms and surveys',
    entities: ['form', 'response', 'question', 'survey', 'webhook', 'workspace'],
  },
  telephony: {
    about: 'Voice and SMS communications',
    entities: ['call', 'sms message', 'phone number', 'recording', 'voicemail', 'contact'],
  },
  analytics: {
    about: 'Product analytics',
    entities: ['event', 'funnel', 'cohort', 'dashboard', 'chart', 'user profile', 'report'],
  },
  logistics: {
    about: 'Shipping and logistics',
    entities: ['shipment', 'label', 'tracking event', 'carrier rate', 'pickup', 'warehouse'],
  },
};

const VERBS: { verb: string; phrasings: string[]; params: string[] }[] = [
  {
    verb: 'create',
    phrasings: ['Create a new {e} in {p}.', 'Add a {e} to your {p} account.', 'Creates a {e} with the given fields.'],
    params: ['name', 'description', 'fields'],
  },
  {
    verb: 'get',
    phrasings: [
      'Get a {e} by ID.',
      'Retrieve the details of a single {e}.',
      'Fetch one {e} with all of its properties.',
    ],
    params: ['id'],
  },
  {
    verb: 'list',
    phrasings: [
      'List {e}s, newest first, with pagination.',
      'Return all {e}s of the account.',
      'List the {e}s visible to the authenticated user.',
    ],
    params: ['limit', 'cursor'],
  },
  {
    verb: 'update',
    phrasings: ['Update the fields of a {e}.', 'Modify an existing {e}.', 'Change properties of a {e}.'],
    params: ['id', 'fields'],
  },
  {
    verb: 'delete',
    phrasings: ['Delete a {e} permanently.', 'Remove a {e}.', 'Deletes the {e} with the given ID.'],
    params: ['id'],
  },
  {
    verb: 'search',
    phrasings: ['Search {e}s by keyword or filter.', 'Find {e}s matching a query.', 'Full-text search over {e}s.'],
    params: ['query', 'limit'],
  },
  {
    verb: 'archive',
    phrasings: ['Archive a {e} so it no longer shows in lists.', 'Move a {e} to the archive.'],
    params: ['id'],
  },
  { verb: 'export', phrasings: ['Export {e}s as CSV.', 'Download a CSV export of {e}s.'], params: ['format', 'since'] },
  { verb: 'assign', phrasings: ['Assign a {e} to a user.', 'Set the owner of a {e}.'], params: ['id', 'user_id'] },
  { verb: 'count', phrasings: ['Count {e}s matching a filter.', 'Return the number of {e}s.'], params: ['filter'] },
];

const PARAM_DOCS: Record<string, string> = {
  name: 'Display name',
  description: 'Free-text description',
  fields: 'Field values to set',
  id: 'Identifier',
  limit: 'Maximum number of results',
  cursor: 'Pagination cursor',
  query: 'Search text',
  format: 'Export format',
  since: 'Only items changed after this date (ISO 8601)',
  user_id: 'User to assign',
  filter: 'Filter expression',
};

const PREFIX = [
  'acme',
  'nimbus',
  'orbit',
  'zephyr',
  'quartz',
  'atlas',
  'vertex',
  'lumen',
  'cobalt',
  'harbor',
  'pioneer',
  'summit',
  'ember',
  'falcon',
  'granite',
  'helix',
  'ion',
  'juniper',
  'kite',
  'lagoon',
  'maple',
  'nova',
  'onyx',
  'prism',
  'quill',
];
const SUFFIX = [
  'ly',
  'hub',
  'desk',
  'flow',
  'base',
  'stack',
  'works',
  'cloud',
  'io',
  'labs',
  'point',
  'sync',
  'ware',
  'deck',
  'grid',
  'loop',
];

const titleCase = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);
const snake = (s: string): string => s.replace(/\s+/g, '_');

function schemaFor(params: string[], entity: string): JsonSchemaObject {
  const properties: Record<string, unknown> = { PCID: { type: 'string', description: 'Connection id (PCID).' } };
  for (const p of params)
    properties[p] = {
      type: p === 'limit' ? 'integer' : p === 'fields' ? 'object' : 'string',
      description: `${PARAM_DOCS[p]} of the ${entity}.`,
    };
  return {
    type: 'object',
    properties,
    required: ['PCID', ...params.filter((p) => p === 'id' || p === 'name' || p === 'query')],
  };
}

/** `count` synthetic tools, spread over made-up products (deterministic for a seed). */
export function syntheticCatalog(count: number, seed = 7): CatalogTool[] {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const categories = Object.keys(CATEGORIES);
  const out: CatalogTool[] = [];
  for (let p = 0; out.length < count; p++) {
    const cat = categories[p % categories.length]!;
    const { about, entities } = CATEGORIES[cat]!;
    const path = `${PREFIX[p % PREFIX.length]}${SUFFIX[Math.floor(p / PREFIX.length) % SUFFIX.length]}${p >= PREFIX.length * SUFFIX.length ? p : ''}`;
    const title = titleCase(path);
    const entityOrder = p % 3 === 0;
    for (const entity of entities) {
      for (const v of VERBS) {
        if (out.length >= count || rand() < 0.35) continue;
        const name = entityOrder ? `${path}_${snake(entity)}_${v.verb}` : `${path}_${v.verb}_${snake(entity)}`;
        out.push({
          server: path,
          serverTitle: title,
          serverDescription: `${title}: ${about.toLowerCase()} (${cat}).`,
          embedded: false,
          serviceKey: path,
          tool: {
            name,
            title: `${titleCase(v.verb)} ${entity}`,
            description: pick(v.phrasings).replaceAll('{e}', entity).replaceAll('{p}', title),
            inputSchema: schemaFor(v.params, entity),
            annotations: { readOnlyHint: ['get', 'list', 'search', 'export', 'count'].includes(v.verb) },
          },
        });
      }
    }
  }
  return out;
}
