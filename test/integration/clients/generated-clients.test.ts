/**
 * Clients generated from our bundle just work, checked as a user's CI would: the CLIs of
 * openapi-typescript (+ openapi-fetch) and @hey-api/openapi-ts (its bundled fetch client) run
 * on generated/openapi/switchyard.json; a hand-written program per client (flows/*.ts.txt,
 * no casts, default serializers) must typecheck in strict mode with zero diagnostics, then
 * run against a live service on loopback: token, /v1 workflows, trigger calls by GET (query
 * `inputs`) and POST (JSON body), polling, results, and a synchronous call whose body union
 * is narrowed. Run inputs must be stored exactly as sent, query values converted to the
 * types the workflow's inputSchema declares (openapi/triggers.yaml, parameter `inputs`).
 * STORE=pg or STORE=sqlite picks one store; otherwise every store this machine has.
 */
import { expect } from 'chai';
import type { StoreKind } from '../../../src/storage/db.js';
import { findRun, runInputs } from '../../../src/runs/runs.js';
import { storeKinds } from '../../helpers/store.js';
import { startTestServer, createTestOrg, type TestServer, type TestOrg } from '../../helpers/server.js';
import { deploy, code, type Deployed } from '../../helpers/runs.js';
import { CLIENTS, generateClients, listFiles, runFlow, typecheck, type ClientKind, type Generated } from './project.js';
import { recordingProxy, type RecordingProxy } from './proxy.js';

const chosen = process.env.STORE;
const kinds: StoreKind[] = chosen === 'pg' || chosen === 'sqlite' ? [chosen] : await storeKinds();

/** What the flows send, by query on GET and as the JSON body on POST. */
const SENT = { source: 'sdk', seats: 5 };

/**
 * Echoes its inputs as the step's JSON result and as the file `inputs.json`, so a client sees
 * the stored inputs through the polling results (`resultUrls`) as well as the sync body.
 */
const ECHO = {
  name: 'Client echo',
  inputSchema: {
    type: 'object',
    properties: { source: { type: 'string' }, seats: { type: 'integer' } },
    required: ['source', 'seats'],
  },
  steps: [
    code(
      'Echo inputs',
      'ctx.files.write("inputs.json", JSON.stringify(ctx.inputs), "application/json"); return ctx.inputs;',
      { resultType: 'json' },
    ),
  ],
};

/**
 * The query string each client sends for `inputs` = SENT. openapi-fetch serialises object
 * parameters as deepObject whatever the document says; the server reads `inputs[<name>]` as
 * `<name>` (openapi/triggers.yaml, `inputs`). Hey API follows the declared form/explode.
 */
const QUERY: Record<ClientKind, string> = {
  'openapi-fetch': 'inputs[source]=sdk&inputs[seats]=5',
  'hey-api': 'source=sdk&seats=5',
};

describe('Generated clients: openapi-typescript + openapi-fetch and @hey-api/openapi-ts, from the bundle', function () {
  this.timeout(90_000);
  let project: Generated | undefined;
  let diagnostics: ReturnType<typeof typecheck>;
  const live = new Map<StoreKind, Live>();

  before(async () => {
    // The generators and tsc are child processes: they overlap the servers' start-up, which
    // is CPU work in this process. tsc is awaited by the typecheck tests at the end.
    const generating = generateClients().then((generated) => {
      project = generated;
      diagnostics = typecheck(generated.dir);
    });
    const starting = (async () => {
      for (const store of kinds) live.set(store, await startLive(store));
    })();
    await Promise.all([generating, starting]);
  });
  after(async () => {
    for (const l of live.values()) await l.close();
    project?.remove();
  });

  it('each generator wrote a client with no warning; Hey API bundles its fetch client (no runtime package)', () => {
    expect(listFiles(`${project!.dir}/openapi-fetch`)).to.deep.equal(['flow.ts', 'schema.d.ts']);
    const hey = listFiles(`${project!.dir}/hey-api/client`);
    expect(hey).to.include.members([
      'index.ts',
      'sdk.gen.ts',
      'types.gen.ts',
      'client.gen.ts',
      'client/index.ts',
      'client/client.gen.ts',
    ]);
    for (const kind of CLIENTS)
      expect(project!.logs[kind], `${kind} generator output`).not.to.match(/warn|error|deprecat/i);
  });

  for (const store of kinds) {
    describe(`against a live service (${store})`, function () {
      afterEach(() => live.get(store)!.server.assertResponsesValid());

      for (const kind of CLIENTS) {
        it(`${kind}: the flow runs; inputs stored exactly as sent, query values typed by the inputSchema`, async function () {
          const { server, org, echo, proxy } = live.get(store)!;
          proxy.seen.length = 0;
          const report = (await runFlow(project!.flows[kind], {
            SWITCHYARD_URL: proxy.baseUrl,
            SWITCHYARD_CLIENT_ID: org.clientId,
            SWITCHYARD_CLIENT_SECRET: org.clientSecret,
            SWITCHYARD_ORG_ID: org.orgId,
            SWITCHYARD_API_KEY: org.apiKey,
            SWITCHYARD_AUTOMATION_ID: echo.automationId,
            SWITCHYARD_TRIGGER_ID: echo.apiTriggerId,
            SWITCHYARD_INPUTS: JSON.stringify(SENT),
          })) as FlowReport;

          const triggerCalls = proxy.seen
            .filter((line) => line.includes('/ext/triggers/'))
            .map((line) => line.replace(echo.apiTriggerId, '{triggerId}'));
          this.test!.title += ` (GET sent ?${triggerCalls[0]?.split('?')[1] ?? ''})`;
          expect(triggerCalls).to.deep.equal([
            `GET /ext/triggers/{triggerId}?${QUERY[kind]}`,
            'POST /ext/triggers/{triggerId}',
            `GET /ext/triggers/{triggerId}?${QUERY[kind]}`,
          ]);

          expect(report.expiresIn).to.equal(3600);
          expect(report.listed).to.include(echo.automationId);
          expect(report.declaredInputSchema).to.deep.equal(ECHO.inputSchema);
          expect(report.createdVersion).to.equal(1);
          expect(report.runs.map((r) => [r.via, r.status, r.stored])).to.deep.equal([
            ['GET', 'COMPLETE', SENT],
            ['POST', 'COMPLETE', SENT],
          ]);
          expect(report.sync).to.include({ runId: report.sync.id, status: 'COMPLETE' });
          expect(new Date(report.sync.started).toISOString()).to.equal(report.sync.started);
          expect(report.sync.inputs, 'sync body inputs').to.deep.equal(SENT);
          expect(report.sync.stepResult, 'sync step result').to.deep.equal(SENT);

          // The store itself, not only what the service reports back.
          for (const runId of [...report.runs.map((r) => r.runId), report.sync.runId]) {
            const row = await findRun(server.app.services.db, org.orgId, runId);
            expect(row, runId).to.not.equal(undefined);
            expect(runInputs(row!), `stored inputs of ${runId}`).to.deep.equal(SENT);
          }
        });
      }
    });
  }

  describe('typecheck (tsc, strict, noUncheckedIndexedAccess)', () => {
    for (const kind of CLIENTS) {
      it(`${kind}: the flow and the generated client compile with 0 errors`, async () => {
        expect((await diagnostics)[kind].join('\n\n'), `${kind} diagnostics`).to.equal('');
      });
    }

    it('nothing else in the project (openapi-fetch, @types/node) has a diagnostic', async () => {
      expect((await diagnostics).other.join('\n\n')).to.equal('');
    });
  });
});

/** A service on loopback with an organisation, the echo workflow and a recording proxy in front. */
interface Live {
  server: TestServer;
  org: TestOrg;
  echo: Deployed;
  proxy: RecordingProxy;
  close(): Promise<void>;
}

async function startLive(store: StoreKind): Promise<Live> {
  const server = await startTestServer(store);
  try {
    const org = await createTestOrg(server, 'Client org');
    const echo = await deploy(server, org, ECHO);
    const proxy = await recordingProxy(server.baseUrl);
    return {
      server,
      org,
      echo,
      proxy,
      close: async () => {
        await proxy.close();
        await server.close();
      },
    };
  } catch (err) {
    await server.close();
    throw err;
  }
}

interface FlowReport {
  expiresIn: number;
  listed: string[];
  declaredInputSchema: unknown;
  createdVersion: number;
  runs: { via: string; runId: string; status: string; stored: unknown }[];
  sync: { runId: string; id: string; started: string; status: string; inputs: unknown; stepResult: unknown };
}
