import { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { loadConfig, ConfigError } from '../../../src/config/index.js';
import { createLogger, redactUrl } from '../../../src/config/logger.js';

const dataDir = () => mkdtempSync(path.join(os.tmpdir(), 'switchyard-config-'));

describe('config', () => {
  it('defaults: port 8080, every base URL on PUBLIC_URL, mcp under /mcp', () => {
    const c = loadConfig({ DATA_DIR: dataDir() });
    expect(c.port).to.equal(8080);
    expect(c.baseUrls).to.deep.equal({
      triggers: 'http://localhost:8080',
      auth: 'http://localhost:8080',
      mcp: 'http://localhost:8080/mcp',
      connect: 'http://localhost:8080',
      runFiles: 'http://localhost:8080',
    });
    expect(c.secretKey).to.have.length(32);
  });

  it('honours one base URL per spec host and trims trailing slashes', () => {
    const c = loadConfig({
      DATA_DIR: dataDir(),
      PUBLIC_URL: 'https://sy.example.org/',
      AUTH_URL: 'https://auth.example.org/',
      MCP_URL: 'https://mcp.example.org',
    });
    expect(c.baseUrls.auth).to.equal('https://auth.example.org');
    expect(c.baseUrls.mcp).to.equal('https://mcp.example.org');
    expect(c.baseUrls.triggers).to.equal('https://sy.example.org');
  });

  it('sqlite durability is NORMAL unless SQLITE_SYNCHRONOUS=FULL; gateway upstream limits have defaults', () => {
    const c = loadConfig({ DATA_DIR: dataDir() });
    expect(c).to.include({ sqliteSynchronous: 'NORMAL', upstreamTimeoutMs: 30_000, upstreamIdleMs: 300_000 });
    expect(loadConfig({ DATA_DIR: dataDir(), SQLITE_SYNCHRONOUS: 'full' }).sqliteSynchronous).to.equal('FULL');
  });

  it('token failure limits: 10 per client and 30 per address in 60 s by default, each a setting, 0 turning one off', () => {
    expect(loadConfig({ DATA_DIR: dataDir() }).tokenFailureLimits).to.deep.equal({
      windowMs: 60_000,
      perClient: 10,
      perAddress: 30,
      trackedKeys: 50_000,
    });
    const c = loadConfig({
      DATA_DIR: dataDir(),
      TOKEN_FAILURE_WINDOW_MS: '5000',
      TOKEN_FAILURE_LIMIT_PER_CLIENT: '0',
      TOKEN_FAILURE_LIMIT_PER_ADDRESS: '100',
      TOKEN_FAILURE_TRACKED_KEYS: '1000',
    });
    expect(c.tokenFailureLimits).to.deep.equal({ windowMs: 5000, perClient: 0, perAddress: 100, trackedKeys: 1000 });
  });

  it('run concurrency and sandbox processes follow the cores; context reuse and process recycling are settings', () => {
    const cores = os.availableParallelism();
    const c = loadConfig({ DATA_DIR: dataDir() });
    expect(c).to.include({
      runConcurrency: Math.max(32, 32 * cores),
      sandboxPoolSize: Math.max(2, cores),
      sandboxReuseContexts: true,
      sandboxMaxExecutions: 10_000,
    });
    const set = loadConfig({
      DATA_DIR: dataDir(),
      RUN_CONCURRENCY: '3',
      SANDBOX_POOL_SIZE: '5',
      SANDBOX_REUSE_CONTEXTS: 'false',
      SANDBOX_MAX_EXECUTIONS: '1',
    });
    expect(set).to.include({
      runConcurrency: 3,
      sandboxPoolSize: 5,
      sandboxReuseContexts: false,
      sandboxMaxExecutions: 1,
    });
  });

  it('browser slots: 4 per process, half of them per organisation unless BROWSER_ORG_MAX_CONTEXTS says otherwise', () => {
    expect(loadConfig({ DATA_DIR: dataDir() }).browser).to.include({ maxContexts: 4, orgMaxContexts: 2 });
    expect(loadConfig({ DATA_DIR: dataDir(), BROWSER_MAX_CONTEXTS: '1' }).browser).to.include({
      maxContexts: 1,
      orgMaxContexts: 1,
    });
    expect(loadConfig({ DATA_DIR: dataDir(), BROWSER_MAX_CONTEXTS: '7' }).browser.orgMaxContexts).to.equal(3);
    expect(
      loadConfig({ DATA_DIR: dataDir(), BROWSER_MAX_CONTEXTS: '6', BROWSER_ORG_MAX_CONTEXTS: '6' }).browser,
    ).to.include({ maxContexts: 6, orgMaxContexts: 6 });
  });

  it('RUN_ORG_CONCURRENCY: three quarters of RUN_CONCURRENCY, at least twice SANDBOX_POOL_SIZE, at most RUN_CONCURRENCY', () => {
    const cores = os.availableParallelism();
    const runs = Math.max(32, 32 * cores);
    expect(loadConfig({ DATA_DIR: dataDir() }).runOrgConcurrency).to.equal(
      Math.min(runs, Math.max(2 * Math.max(2, cores), runs - Math.ceil(runs / 4))),
    );
    const of = (env: Record<string, string>) => loadConfig({ DATA_DIR: dataDir(), ...env }).runOrgConcurrency;
    expect(of({ RUN_CONCURRENCY: '64', SANDBOX_POOL_SIZE: '2' })).to.equal(48);
    expect(of({ RUN_CONCURRENCY: '16', SANDBOX_POOL_SIZE: '2' })).to.equal(12);
    expect(of({ RUN_CONCURRENCY: '16', SANDBOX_POOL_SIZE: '8' })).to.equal(16);
    expect(of({ RUN_CONCURRENCY: '3', SANDBOX_POOL_SIZE: '2' })).to.equal(3);
    expect(of({ RUN_CONCURRENCY: '0', SANDBOX_POOL_SIZE: '2' })).to.equal(1);
    expect(of({ RUN_CONCURRENCY: '64', RUN_ORG_CONCURRENCY: '5' })).to.equal(5);
    for (const bad of ['0', '257', '2.5', 'x'])
      expect(() => loadConfig({ DATA_DIR: dataDir(), RUN_ORG_CONCURRENCY: bad })).to.throw(
        /RUN_ORG_CONCURRENCY must be an integer between 1 and 256/,
      );
  });

  it('CODE_ISOLATION is auto unless set', () => {
    expect(loadConfig({ DATA_DIR: dataDir() }).codeIsolation).to.equal('auto');
    for (const mode of ['auto', 'strict', 'process', ' Strict '])
      expect(loadConfig({ DATA_DIR: dataDir(), CODE_ISOLATION: mode }).codeIsolation).to.equal(
        mode.trim().toLowerCase(),
      );
  });

  it('no variable turns a containment layer off or checks responses: the old test switches change nothing, under NODE_ENV=test too', () => {
    const dir = dataDir();
    const plain = loadConfig({ DATA_DIR: dir });
    const switches = {
      SANDBOX_TEST_BREACH: '1',
      BROWSER_TEST_NO_SCHEME_REFUSAL: '1',
      BROWSER_TEST_RELAY_OPEN: '1',
      VALIDATE_RESPONSES: 'true',
    };
    for (const NODE_ENV of [undefined, 'test', 'production']) {
      const c = loadConfig({ DATA_DIR: dir, NODE_ENV, ...switches });
      expect(c, `NODE_ENV=${NODE_ENV}`).to.deep.equal(plain);
    }
    for (const key of ['sandboxTestBreach', 'browserTestNoSchemeRefusal', 'browserTestRelayOpen', 'validateResponses'])
      expect(plain).to.not.have.property(key);
  });

  it('holds exactly the members of schemas/config/config.schema.json, secrets included; secretKey as its 32 bytes', () => {
    const schema = JSON.parse(
      readFileSync(new URL('../../../schemas/config/config.schema.json', import.meta.url), 'utf8'),
    ) as { properties: Record<string, { properties?: Record<string, unknown> }> };
    const key = randomBytes(32);
    const c = loadConfig({
      DATA_DIR: dataDir(),
      // The URL-safe alphabet without padding is read as well; the config holds the bytes.
      SECRET_KEY: key.toString('base64url'),
      EMBEDDINGS_API_KEY: 'emb-secret',
      ANTHROPIC_API_KEY: 'anthropic-secret',
      GEMINI_API_KEY: 'gemini-secret',
    });
    expect(Object.keys(c).sort()).to.deep.equal(Object.keys(schema.properties).sort());
    expect(Object.keys(c.models).sort()).to.deep.equal(Object.keys(schema.properties.models!.properties!).sort());
    expect(Buffer.isBuffer(c.secretKey) && c.secretKey.equals(key)).to.equal(true);
    expect(c.embeddingsApiKey).to.equal('emb-secret');
    expect(c.models.keys).to.deep.equal({
      openaiCompatible: null,
      openai: null,
      anthropic: 'anthropic-secret',
      google: 'gemini-secret',
    });
    expect(c.models.providers).to.deep.equal(['anthropic', 'google']);
    expect([c.databaseUrl, c.redisUrl]).to.deep.equal([null, null]);
  });

  it('a value the schema refuses names its path and rule, never the value', () => {
    const secretUrl = 'mysql://admin:hunter2-secret@db.example/x';
    let message = '';
    try {
      loadConfig({ DATA_DIR: dataDir(), DATABASE_URL: secretUrl });
    } catch (err) {
      expect(err).to.be.instanceOf(ConfigError);
      message = (err as Error).message;
    }
    expect(message).to.match(/^invalid configuration: \/databaseUrl must match pattern/);
    expect(message).to.not.include('hunter2');
  });

  it('the openai-compatible provider gets output schemas natively unless OPENAI_COMPATIBLE_STRUCTURED_OUTPUTS=false', () => {
    expect(loadConfig({ DATA_DIR: dataDir() }).models.openaiCompatibleStructuredOutputs).to.equal(true);
    const off = loadConfig({ DATA_DIR: dataDir(), OPENAI_COMPATIBLE_STRUCTURED_OUTPUTS: 'false' });
    expect(off.models.openaiCompatibleStructuredOutputs).to.equal(false);
  });

  it('keeps the generated secret key across loads of the same DATA_DIR', () => {
    const dir = dataDir();
    expect(loadConfig({ DATA_DIR: dir }).secretKey.equals(loadConfig({ DATA_DIR: dir }).secretKey)).to.equal(true);
  });

  for (const [name, env, message] of [
    ['a port out of range', { PORT: '70000' }, 'PORT'],
    ['a non-numeric port', { PORT: 'eighty' }, 'PORT'],
    ['a relative public URL', { PUBLIC_URL: 'localhost:8080' }, 'PUBLIC_URL'],
    ['an unknown log level', { LOG_LEVEL: 'verbose' }, '/logLevel'],
    ['a non-PostgreSQL DATABASE_URL', { DATABASE_URL: 'mysql://x' }, '/databaseUrl'],
    ['a short SECRET_KEY', { SECRET_KEY: Buffer.alloc(8).toString('base64') }, 'SECRET_KEY'],
    ['a revocation window over 5 s', { REVOCATION_CACHE_MS: '6000' }, 'REVOCATION_CACHE_MS'],
    ['a bad boolean', { SEED_DEMO: 'maybe' }, 'SEED_DEMO'],
    ['a token failure window under 1 s', { TOKEN_FAILURE_WINDOW_MS: '10' }, 'TOKEN_FAILURE_WINDOW_MS'],
    ['a negative token failure limit', { TOKEN_FAILURE_LIMIT_PER_ADDRESS: '-1' }, 'TOKEN_FAILURE_LIMIT_PER_ADDRESS'],
    ['an unknown sqlite synchronous mode', { SQLITE_SYNCHRONOUS: 'OFF' }, 'SQLITE_SYNCHRONOUS'],
    ['a gateway upstream timeout under 100 ms', { GATEWAY_UPSTREAM_TIMEOUT_MS: '5' }, 'GATEWAY_UPSTREAM_TIMEOUT_MS'],
    ['a sandbox process that serves no execution', { SANDBOX_MAX_EXECUTIONS: '0' }, 'SANDBOX_MAX_EXECUTIONS'],
    ['a bad context reuse switch', { SANDBOX_REUSE_CONTEXTS: 'sometimes' }, 'SANDBOX_REUSE_CONTEXTS'],
    [
      'an organisation cap on browser tasks over the process cap',
      { BROWSER_MAX_CONTEXTS: '4', BROWSER_ORG_MAX_CONTEXTS: '5' },
      'BROWSER_ORG_MAX_CONTEXTS (5) must not be more than BROWSER_MAX_CONTEXTS (4)',
    ],
    ['no browser slot for an organisation', { BROWSER_ORG_MAX_CONTEXTS: '0' }, 'BROWSER_ORG_MAX_CONTEXTS'],
    ['an unknown isolation mode', { CODE_ISOLATION: 'none' }, 'CODE_ISOLATION must be auto, strict or process'],
    [
      'a bad structured-output switch',
      { OPENAI_COMPATIBLE_STRUCTURED_OUTPUTS: 'json' },
      'OPENAI_COMPATIBLE_STRUCTURED_OUTPUTS must be true or false',
    ],
  ] as const) {
    it(`rejects ${name} with a ConfigError naming it`, () => {
      expect(() => loadConfig({ DATA_DIR: dataDir(), ...env })).to.throw(ConfigError, message);
    });
  }
});

describe('logging redaction', () => {
  it('removes webhook keys from URLs and signature query values', () => {
    expect(redactUrl('/ext/webhook/syk_secret123/triggers/trg_1?x=1')).to.equal(
      '/ext/webhook/[REDACTED]/triggers/trg_1?x=1',
    );
    expect(redactUrl('/ext/webhook/syk_secret123/runs/wf/run/status')).to.not.contain('syk_secret123');
    expect(redactUrl('/files/f1?expires=1&signature=abc')).to.equal('/files/f1?expires=1&signature=[REDACTED]');
  });

  it('never writes authorization headers, API keys or client secrets', () => {
    let out = '';
    const sink = new Writable({
      write(chunk, _enc, cb) {
        out += chunk.toString();
        cb();
      },
    });
    const log = createLogger('info', sink);
    log.info(
      {
        req: { headers: { authorization: 'Bearer eyJsecret', 'x-api-key': 'syk_abc' } },
        clientSecret: 'sys_abc',
        apiKey: 'syk_def',
      },
      'hello',
    );
    expect(out).to.contain('hello');
    for (const secret of ['eyJsecret', 'syk_abc', 'sys_abc', 'syk_def']) expect(out).to.not.contain(secret);
  });
});
