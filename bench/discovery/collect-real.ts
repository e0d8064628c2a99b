/**
 * Collects the real tool lists of published MCP server packages (issue 13, part 1) into
 * bench/discovery/real/tools.json, the fixture for an honest discovery evaluation.
 *
 * The packages must already be installed in a scratch folder (default /tmp/mcp-eval, or argv[2];
 * see bench/discovery/real/README.md for the exact `npm install` command). Each server in SERVERS
 * is started over stdio with `node <its bin>` (nothing is downloaded at run time), with cwd set to
 * the scratch folder, a scratch HOME and only the dummy environment variables listed below (no
 * variable of the calling shell except PATH is passed on, so no real secret can reach a server).
 * The script calls `tools/list` (following `nextCursor`), and writes the tools exactly as each
 * server lists them. A server that fails to start or list within TIMEOUT_MS is skipped with a
 * printed reason. Servers are sorted by product; tools keep the server's order.
 *
 * Usage: npx tsx bench/discovery/collect-real.ts [/tmp/mcp-eval]
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const OUT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'real', 'tools.json');
const TIMEOUT_MS = 30_000;
const CONCURRENCY = 6;

interface ServerSpec {
  product: string;
  package: string;
  version: string;
  /** Which bin of the package to run when it has several (default: the first). */
  bin?: string;
  /** Arguments after the bin; `{scratch}` is replaced by the scratch folder. */
  args?: string[];
  /** Dummy environment variables the server needs at start-up (never real secrets). */
  env?: Record<string, string>;
}

/** Fake credential files some servers insist on reading at start-up (written under {scratch}/.home). */
const FAKE_OAUTH_KEYS = JSON.stringify({
  installed: {
    client_id: 'fake-client-id.apps.googleusercontent.com',
    client_secret: 'fake-client-secret',
    redirect_uris: ['http://localhost:3000/oauth2callback'],
  },
});
const FAKE_GOOGLE_TOKEN = JSON.stringify({
  access_token: 'ya29.fake000',
  refresh_token: 'fake-refresh-token',
  token_type: 'Bearer',
  expiry_date: 4102444800000,
});
const FAKE_FILES: Record<string, string> = {
  'gcp-oauth.keys.json': FAKE_OAUTH_KEYS,
  '.gmail-mcp/gcp-oauth.keys.json': FAKE_OAUTH_KEYS,
  '.gmail-mcp/credentials.json': FAKE_GOOGLE_TOKEN,
  'gdrive-credentials.json': FAKE_GOOGLE_TOKEN,
  'vault/.keep': '',
};

const PG_URL = 'postgresql://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = 'redis://127.0.0.1:6379';

/** The fixture's servers: one package per product. */
const SERVERS: ServerSpec[] = [
  {
    product: 'GitHub',
    package: '@modelcontextprotocol/server-github',
    version: '2025.4.8',
    env: { GITHUB_PERSONAL_ACCESS_TOKEN: 'ghp_fake000' },
  },
  {
    product: 'GitLab',
    package: '@modelcontextprotocol/server-gitlab',
    version: '2025.4.25',
    env: { GITLAB_PERSONAL_ACCESS_TOKEN: 'glpat-fake000', GITLAB_API_URL: 'https://gitlab.example.invalid/api/v4' },
  },
  {
    product: 'Slack',
    package: '@modelcontextprotocol/server-slack',
    version: '2025.4.25',
    env: { SLACK_BOT_TOKEN: 'xoxb-fake000', SLACK_TEAM_ID: 'T00000000' },
  },
  {
    product: 'Google Maps',
    package: '@modelcontextprotocol/server-google-maps',
    version: '0.6.2',
    env: { GOOGLE_MAPS_API_KEY: 'fake-google-maps-key' },
  },
  { product: 'PostgreSQL', package: '@modelcontextprotocol/server-postgres', version: '0.6.2', args: [PG_URL] },
  {
    product: 'Filesystem',
    package: '@modelcontextprotocol/server-filesystem',
    version: '2026.8.31',
    args: ['{scratch}'],
  },
  {
    product: 'Memory (knowledge graph)',
    package: '@modelcontextprotocol/server-memory',
    version: '2026.8.31',
    env: { MEMORY_FILE_PATH: '{scratch}/.home/memory.json' },
  },
  {
    product: 'Everything (MCP reference)',
    package: '@modelcontextprotocol/server-everything',
    version: '2026.8.31',
    args: ['stdio'],
  },
  { product: 'Sequential Thinking', package: '@modelcontextprotocol/server-sequential-thinking', version: '2026.8.31' },
  { product: 'Redis', package: '@modelcontextprotocol/server-redis', version: '2025.4.25', args: [REDIS_URL] },
  {
    product: 'Google Drive',
    package: '@modelcontextprotocol/server-gdrive',
    version: '2025.1.14',
    env: {
      GDRIVE_CREDENTIALS_PATH: '{scratch}/.home/gdrive-credentials.json',
      GDRIVE_OAUTH_PATH: '{scratch}/.home/gcp-oauth.keys.json',
    },
  },
  {
    product: 'AWS Knowledge Base',
    package: '@modelcontextprotocol/server-aws-kb-retrieval',
    version: '0.6.2',
    env: { AWS_ACCESS_KEY_ID: 'AKIAFAKE000', AWS_SECRET_ACCESS_KEY: 'fake-secret', AWS_REGION: 'us-east-1' },
  },
  {
    product: 'EverArt',
    package: '@modelcontextprotocol/server-everart',
    version: '0.6.2',
    env: { EVERART_API_KEY: 'fake-everart-key' },
  },
  { product: 'Puppeteer', package: '@modelcontextprotocol/server-puppeteer', version: '2025.5.12' },
  { product: 'Notion', package: '@notionhq/notion-mcp-server', version: '2.5.2', env: { NOTION_TOKEN: 'ntn_fake000' } },
  // 0.3.x proxies to mcp.stripe.com at start; 0.2.5 is the last release that lists its tools locally.
  { product: 'Stripe', package: '@stripe/mcp', version: '0.2.5', args: ['--tools=all', '--api-key=sk_test_fake000'] },
  { product: 'Playwright', package: '@playwright/mcp', version: '0.0.83', args: ['--headless'] },
  { product: 'Sentry', package: '@sentry/mcp-server', version: '0.39.0', args: ['--access-token=sntrys_fake000'] },
  // The 'docs' feature (search_docs) fetches its description from the Supabase Content API; all other feature groups are listed.
  {
    product: 'Supabase',
    package: '@supabase/mcp-server-supabase',
    version: '0.13.0',
    args: [
      '--access-token=sbp_fake000',
      '--features=account,database,debugging,development,functions,branching,storage',
    ],
  },
  {
    product: 'HubSpot',
    package: '@hubspot/mcp-server',
    version: '0.4.0',
    env: { PRIVATE_APP_ACCESS_TOKEN: 'pat-na1-fake000' },
  },
  {
    product: 'MongoDB',
    package: 'mongodb-mcp-server',
    version: '3.0.4',
    env: {
      MDB_MCP_CONNECTION_STRING: 'mongodb://127.0.0.1:27017/fake',
      MDB_MCP_API_CLIENT_ID: 'fake-client-id',
      MDB_MCP_API_CLIENT_SECRET: 'fake-client-secret',
      MDB_MCP_TELEMETRY: 'disabled',
    },
  },
  { product: 'Neon', package: '@neondatabase/mcp-server-neon', version: '0.3.7', args: ['start', 'napi_fake000'] },
  {
    product: 'Twilio',
    package: '@twilio-alpha/mcp',
    version: '0.7.0',
    args: ['AC00000000000000000000000000000000/SK00000000000000000000000000000000:fakesecret'],
  },
  {
    product: 'Cloudflare',
    package: '@cloudflare/mcp-server-cloudflare',
    version: '0.2.0',
    args: ['run', 'fake-account-id'],
    env: { CLOUDFLARE_API_TOKEN: 'fake-cloudflare-token', CLOUDFLARE_ACCOUNT_ID: 'fake-account-id' },
  },
  { product: 'Kubernetes', package: 'mcp-server-kubernetes', version: '4.1.7' },
  { product: 'Airtable', package: 'airtable-mcp-server', version: '1.14.0', env: { AIRTABLE_API_KEY: 'patfake000' } },
  { product: 'Firecrawl', package: 'firecrawl-mcp', version: '3.26.0', env: { FIRECRAWL_API_KEY: 'fc-fake000' } },
  { product: 'Exa', package: 'exa-mcp-server', version: '3.4.1', env: { EXA_API_KEY: 'fake-exa-key' } },
  {
    product: 'Browserbase',
    package: '@browserbasehq/mcp-server-browserbase',
    version: '2.4.3',
    env: {
      BROWSERBASE_API_KEY: 'bb_fake000',
      BROWSERBASE_PROJECT_ID: 'fake-project',
      GEMINI_API_KEY: 'fake-gemini-key',
    },
  },
  { product: 'Context7', package: '@upstash/context7-mcp', version: '4.1.1' },
  {
    product: 'Elasticsearch',
    package: '@elastic/mcp-server-elasticsearch',
    version: '0.3.1',
    env: { ES_URL: 'http://127.0.0.1:9200', ES_API_KEY: 'fake-es-key' },
  },
  // 1.2.x imports '@modelcontextprotocol/sdk/server/mcp' without '.js' and does not start; 1.0.7 does.
  { product: 'Heroku', package: '@heroku/mcp-server', version: '1.0.7', env: { HEROKU_API_KEY: 'fake-heroku-key' } },
  { product: 'Gmail', package: '@gongrzhe/server-gmail-autoauth-mcp', version: '1.1.11' },
  {
    product: 'Google Calendar',
    package: '@cocal/google-calendar-mcp',
    version: '2.6.3',
    env: { GOOGLE_OAUTH_CREDENTIALS: '{scratch}/.home/gcp-oauth.keys.json' },
  },
  {
    product: 'Linear',
    package: '@tacticlaunch/mcp-linear',
    version: '1.4.3',
    env: { LINEAR_API_TOKEN: 'lin_api_fake000' },
  },
  {
    product: 'Jira',
    package: '@aashari/mcp-server-atlassian-jira',
    version: '3.3.0',
    env: {
      ATLASSIAN_SITE_NAME: 'fake-site',
      ATLASSIAN_USER_EMAIL: 'nobody@example.invalid',
      ATLASSIAN_API_TOKEN: 'fake-atlassian-token',
    },
  },
  {
    product: 'Brave Search',
    package: '@brave/brave-search-mcp-server',
    version: '2.1.4',
    env: { BRAVE_API_KEY: 'fake-brave-key' },
  },
  {
    product: 'monday.com',
    package: '@mondaydotcomorg/monday-api-mcp',
    version: '3.3.0',
    args: ['-t', 'fake-monday-token'],
  },
  {
    product: 'Figma',
    package: 'figma-developer-mcp',
    version: '0.13.2',
    args: ['--stdio'],
    env: { FIGMA_API_KEY: 'figd_fake000' },
  },
  {
    product: 'Asana',
    package: '@roychri/mcp-server-asana',
    version: '1.8.0',
    env: { ASANA_ACCESS_TOKEN: 'fake-asana-token' },
  },
  { product: 'Discord', package: 'mcp-discord', version: '1.3.4', env: { DISCORD_TOKEN: 'fake-discord-token' } },
  { product: 'Shopify', package: '@shopify/dev-mcp', version: '1.16.0', env: { OPT_OUT_INSTRUMENTATION: 'true' } },
  { product: 'YouTube', package: '@kimtaeyoon83/mcp-server-youtube-transcript', version: '0.1.1' },
  { product: 'Obsidian', package: 'mcp-obsidian', version: '1.0.0', args: ['{scratch}/.home/vault'] },
  { product: 'Git', package: '@cyanheads/git-mcp-server', version: '2.15.3', env: { MCP_TRANSPORT_TYPE: 'stdio' } },
  { product: 'Tavily', package: 'tavily-mcp', version: '0.2.22', env: { TAVILY_API_KEY: 'tvly-fake000' } },
  {
    product: 'Perplexity',
    package: '@perplexity-ai/mcp-server',
    version: '1.2.1',
    env: { PERPLEXITY_API_KEY: 'pplx-fake000' },
  },
  {
    product: 'CircleCI',
    package: '@circleci/mcp-server-circleci',
    version: '0.20.0',
    env: { CIRCLECI_TOKEN: 'fake-circleci-token' },
  },
  { product: 'Mapbox', package: '@mapbox/mcp-server', version: '0.14.0', env: { MAPBOX_ACCESS_TOKEN: 'pk.fake000' } },
  {
    product: 'Postman',
    package: '@postman/postman-mcp-server',
    version: '2.13.0',
    env: { POSTMAN_API_KEY: 'PMAK-fake000' },
  },
  {
    product: 'Apify',
    package: '@apify/actors-mcp-server',
    version: '0.16.0',
    env: { APIFY_TOKEN: 'apify_api_fake000' },
  },
  { product: 'Netlify', package: '@netlify/mcp', version: '1.15.1' },
  {
    product: 'Pinecone',
    package: '@pinecone-database/mcp',
    version: '0.3.0',
    env: { PINECONE_API_KEY: 'pcsk_fake000' },
  },
  {
    product: 'Upstash',
    package: '@upstash/mcp-server',
    version: '0.3.0',
    args: ['run', 'nobody@example.invalid', 'fake-upstash-key'],
  },
  { product: 'Auth0', package: '@auth0/auth0-mcp-server', version: '0.1.0-beta.19', args: ['run'] },
];

interface ListedTool {
  name: string;
  title?: string;
  description: string;
  inputSchema: unknown;
  annotations?: unknown;
}

interface ServerEntry {
  product: string;
  package: string;
  version: string;
  command: string;
  tools: ListedTool[];
}

interface PackageJson {
  version: string;
  bin?: string | Record<string, string>;
}

function resolveBin(scratch: string, spec: ServerSpec): { binPath: string; version: string } {
  const dir = path.join(scratch, 'node_modules', spec.package);
  const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as PackageJson;
  let rel: string | undefined;
  if (typeof pkg.bin === 'string') rel = pkg.bin;
  else if (pkg.bin) rel = spec.bin ? pkg.bin[spec.bin] : Object.values(pkg.bin)[0];
  if (!rel) throw new Error(`${spec.package} has no bin`);
  return { binPath: path.join(dir, rel), version: pkg.version };
}

function withScratch(value: string, scratch: string): string {
  return value.replaceAll('{scratch}', scratch);
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms / 1000} s (${what})`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The listed fields, in the order name, title, description, inputSchema, annotations. */
function toListedTool(tool: Record<string, unknown>): ListedTool {
  return {
    name: String(tool.name),
    ...(typeof tool.title === 'string' ? { title: tool.title } : {}),
    description: typeof tool.description === 'string' ? tool.description : '',
    inputSchema: tool.inputSchema,
    ...(tool.annotations === undefined ? {} : { annotations: tool.annotations }),
  };
}

async function collect(scratch: string, spec: ServerSpec): Promise<ServerEntry> {
  const { binPath, version } = resolveBin(scratch, spec);
  if (version !== spec.version) throw new Error(`installed version ${version}, expected ${spec.version}`);
  const args = (spec.args ?? []).map((a) => withScratch(a, scratch));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: path.join(scratch, '.home'),
    NODE_ENV: 'production',
  };
  for (const [k, v] of Object.entries(spec.env ?? {})) env[k] = withScratch(v, scratch);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [binPath, ...args],
    env,
    cwd: scratch,
    stderr: 'pipe',
  });
  let stderrTail = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderrTail = (stderrTail + chunk.toString('utf8')).slice(-600);
  });
  const client = new Client({ name: 'switchyard-collect-real', version: '0.1.0' });
  try {
    const tools = await withTimeout(
      (async () => {
        await client.connect(transport);
        const all: ListedTool[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor === undefined ? {} : { cursor });
          for (const t of page.tools) all.push(toListedTool(t as Record<string, unknown>));
          cursor = page.nextCursor;
        } while (cursor);
        return all;
      })(),
      TIMEOUT_MS,
      'start and tools/list',
    );
    if (tools.length === 0) throw new Error('listed no tools');
    const command = ['node', path.relative(scratch, binPath), ...(spec.args ?? [])].join(' ');
    return { product: spec.product, package: spec.package, version, command, tools };
  } catch (err) {
    const tail = stderrTail.trim().split('\n').slice(-3).join(' | ');
    throw new Error(`${(err as Error).message}${tail ? ` — stderr: ${tail}` : ''}`);
  } finally {
    await client.close().catch(() => undefined);
    await transport.close().catch(() => undefined);
  }
}

async function main(): Promise<void> {
  const scratch = path.resolve(process.argv[2] ?? '/tmp/mcp-eval');
  for (const [rel, content] of Object.entries(FAKE_FILES)) {
    const file = path.join(scratch, '.home', rel);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, content);
  }
  const only = process.env.ONLY?.split(',');
  const specs = only ? SERVERS.filter((s) => only.includes(s.package)) : SERVERS;
  const entries: ServerEntry[] = [];
  const failures: string[] = [];
  let next = 0;
  async function worker(): Promise<void> {
    while (next < specs.length) {
      const spec = specs[next++]!;
      try {
        const entry = await collect(scratch, spec);
        entries.push(entry);
        console.log(`ok    ${spec.product} (${spec.package}@${entry.version}): ${entry.tools.length} tools`);
      } catch (err) {
        failures.push(`${spec.product} (${spec.package}@${spec.version}): ${(err as Error).message}`);
        console.log(`skip  ${spec.product} (${spec.package}): ${(err as Error).message}`);
      }
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, () => worker()));
  entries.sort((a, b) => a.product.localeCompare(b.product, 'en'));
  if (!only) {
    mkdirSync(path.dirname(OUT), { recursive: true });
    writeFileSync(OUT, `${JSON.stringify(entries, null, 2)}\n`);
  }
  const total = entries.reduce((n, e) => n + e.tools.length, 0);
  console.log(
    `\n${entries.length} servers, ${total} tools${only ? ' (ONLY set: nothing written)' : ` -> ${path.relative(process.cwd(), OUT)}`}`,
  );
  if (failures.length > 0) console.log(`skipped ${failures.length}:\n  ${failures.join('\n  ')}`);
  process.exit(0);
}

await main();
