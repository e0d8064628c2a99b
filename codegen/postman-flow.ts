/**
 * Hand-written knowledge for the Postman collection: the order of the requests, which
 * values flow from one response into the next request, the bodies that make sense against
 * a real installation, and the expected status where it is not the operation's first
 * documented 2xx. Everything generic (URLs, parameters, security, response schemas,
 * documented headers) is derived from the bundle by codegen/postman.ts.
 *
 * Values may use Postman variables (`{{name}}`). The variables a user sets come from
 * `npx switchyard postman-env` (baseUrl, clientId, clientSecret, orgId, apiKey, demo ids,
 * written from DATA_DIR/bootstrap.json); the others are captured on the way.
 */

/** Where a captured value comes from in the response of a step. */
export type Capture =
  /** A dotted path into the JSON body (`items.0.id`). */
  | { var: string; body: string }
  /** A response header. */
  | { var: string; header: string }
  /** A signed run-files URL in the JSON body, split into the parts downloadRunFile takes. */
  | { signedUrl: string; vars: { fileId: string; expires: string; signature: string } };

/** Extra assertions beyond status, schema and documented headers. */
export type Check = { body: string; equals: unknown } | { body: string; nonEmpty: true } | { textContains: string };

export interface FlowStep {
  /** operationId in the bundle. */
  op: string;
  /** Request name (unique in the collection; polling re-runs a request by name). Default: the operation's summary. */
  name?: string;
  /** Expected HTTP status. Default: the first 2xx the operation documents. */
  expect?: number;
  /** Path parameter values; a parameter not listed here becomes `{{<parameter name>}}`. */
  path?: Record<string, string>;
  /** Query parameters to send (enabled); documented optional ones not listed stay disabled. */
  query?: Record<string, string>;
  /** Headers to send (enabled); documented optional ones not listed stay disabled. */
  headers?: Record<string, string>;
  /** JSON request body (replaces the documented example). */
  json?: unknown;
  /** Form request body (replaces the documented example). */
  form?: Record<string, string>;
  /** Raw request body with its content type. */
  raw?: { contentType: string; text: string };
  captures?: Capture[];
  checks?: Check[];
  /** Repeat this request until a body field reaches one of the values (run polling, spec "Limits"). */
  pollUntil?: { body: string; oneOf: string[]; maxTries: number; delayMs: number };
  /** Why this step is here or shaped this way (goes into the request description). */
  note?: string;
}

export interface FlowFolder {
  name: string;
  description: string;
  steps: FlowStep[];
}

/** Security schemes whose key is a collection variable (bearer schemes use the collection auth). */
export const keyVariables: Record<string, string> = {
  triggerApiKey: 'apiKey',
  channelApiKey: 'channelKey',
};

/**
 * Variables the user (or `switchyard postman-env`) sets. Declared on the collection with
 * empty values so the collection imports cleanly; the environment overrides them.
 */
export const userVariables: { key: string; description: string; secret?: boolean }[] = [
  { key: 'baseUrl', description: 'Service root (PUBLIC_URL), e.g. http://localhost:8080' },
  { key: 'clientId', description: 'Client id of an API credential (DATA_DIR/bootstrap.json)' },
  {
    key: 'clientSecret',
    description: 'Client secret of that credential (shown once; DATA_DIR/bootstrap.json)',
    secret: true,
  },
  { key: 'orgId', description: 'Organisation id; the token scope is org:{{orgId}}' },
  { key: 'apiKey', description: 'Trigger API key: X-API-KEY header and webhook/polling path segment', secret: true },
  { key: 'demoAutomationId', description: 'Demo workflow id (created on first start)' },
  { key: 'demoApiTriggerId', description: 'Demo API trigger id (designated output report.md)' },
  { key: 'demoWebhookTriggerId', description: 'Demo webhook trigger id' },
];

/** Variables the scripts maintain; declared so the collection documents them. */
export const scriptVariables: { key: string; description: string }[] = [
  { key: 'accessToken', description: 'Runtime token fetched by the collection pre-request script (POST /oauth/token)' },
  { key: 'accessTokenExpiresAt', description: 'Expiry of accessToken in epoch milliseconds; refreshed 60 s before' },
];

const workflowV2 = {
  name: 'Postman: greeting report',
  description: 'Created by the Postman collection; deleted at the end of the run.',
  inputSchema: { type: 'object', properties: { name: { type: 'string' } } },
  steps: [
    {
      type: 'code',
      name: 'Compute greeting',
      code: 'return `Hello, ${ctx.inputs.name ?? "world"}!`;',
      resultType: 'plaintext',
    },
    {
      type: 'code',
      name: 'Write report',
      code: 'ctx.files.write("report.md", `# ${ctx.steps[0].result}`, "text/markdown"); return "# " + ctx.steps[0].result;',
      resultType: 'markdown',
    },
  ],
  output: { stepIndex: 1, fileName: 'report.md' },
};

const TERMINAL = ['COMPLETE', 'FAILED', 'TIMEOUT'];

export const flow: FlowFolder[] = [
  {
    name: 'Service',
    description: 'Probes and token-signing metadata; no authentication.',
    steps: [{ op: 'getHealth' }, { op: 'getReadiness' }, { op: 'getJwks' }, { op: 'getAuthorizationServerMetadata' }],
  },
  {
    name: 'Tokens',
    description:
      'Runtime tokens (spec 6). The collection pre-request script already fetches and caches one; these requests show the two endpoints themselves.',
    steps: [
      {
        op: 'issueOauthToken',
        note: 'Credentials in the form body only, with no Authorization header: one client authentication method per request (RFC 6749 section 2.3).',
        form: {
          grant_type: 'client_credentials',
          client_id: '{{clientId}}',
          client_secret: '{{clientSecret}}',
          scope: 'org:{{orgId}}',
        },
        checks: [{ body: 'token_type', equals: 'Bearer' }],
      },
      {
        op: 'exchangeLegacyToken',
        headers: { 'X-Api-Key': '{{clientSecret}}', 'X-Selected-Org': '{{orgId}}' },
        json: {},
      },
    ],
  },
  {
    name: 'Organisation and credentials',
    description: 'The management API (/v1) with the bearer token of the collection.',
    steps: [
      { op: 'getOrganization', checks: [{ body: 'id', equals: '{{orgId}}' }] },
      {
        op: 'rotateSigningKey',
        name: 'Rotate the signing key (refused: the organisation is not in ADMIN_ORG_IDS)',
        expect: 403,
        checks: [{ body: 'error', equals: 'admin_required' }],
        note: 'Rotating is reserved to the organisations ADMIN_ORG_IDS names; a collection run should not rotate the installation key, so it expects the refusal.',
      },
      { op: 'listCredentials' },
      { op: 'createCredential', json: { label: 'Postman run' }, captures: [{ var: 'credentialId', body: 'id' }] },
      {
        op: 'getCredential',
        path: { credentialId: '{{credentialId}}' },
        checks: [{ body: 'id', equals: '{{credentialId}}' }],
      },
      { op: 'listApiKeys' },
      { op: 'createApiKey', json: { label: 'Postman run' }, captures: [{ var: 'keyId', body: 'id' }] },
      { op: 'getApiKey', path: { keyId: '{{keyId}}' }, checks: [{ body: 'id', equals: '{{keyId}}' }] },
    ],
  },
  {
    name: 'Workflows and triggers',
    description: 'Create a workflow, publish a second version, add an API trigger; the clean-up folder deletes them.',
    steps: [
      { op: 'listWorkflows' },
      {
        op: 'createWorkflow',
        json: workflowV2,
        captures: [
          { var: 'workflowId', body: 'automationId' },
          { var: 'workflowEtag', header: 'ETag' },
        ],
      },
      {
        op: 'getWorkflow',
        path: { automationId: '{{workflowId}}' },
        captures: [{ var: 'workflowEtag', header: 'ETag' }],
      },
      {
        op: 'updateWorkflow',
        note: 'Updates require If-Match with the current ETag (428 without, 412 when stale).',
        path: { automationId: '{{workflowId}}' },
        headers: { 'If-Match': '{{workflowEtag}}' },
        json: { ...workflowV2, description: 'Version 2, published by the Postman collection.' },
        captures: [{ var: 'workflowVersion', body: 'version' }],
        checks: [{ body: 'version', equals: 2 }],
      },
      { op: 'listWorkflowVersions', path: { automationId: '{{workflowId}}' } },
      { op: 'getWorkflowVersion', path: { automationId: '{{workflowId}}', version: '{{workflowVersion}}' } },
      {
        op: 'createTrigger',
        json: {
          automationId: '{{workflowId}}',
          kind: 'api',
          name: 'Postman API trigger',
          designatedOutput: { stepIndex: 1, fileName: 'report.md' },
        },
        captures: [{ var: 'triggerId', body: 'triggerId' }],
      },
      { op: 'getTrigger', path: { triggerId: '{{triggerId}}' }, captures: [{ var: 'triggerEtag', header: 'ETag' }] },
      {
        op: 'updateTrigger',
        path: { triggerId: '{{triggerId}}' },
        headers: { 'If-Match': '{{triggerEtag}}' },
        json: { name: 'Postman API trigger (renamed)' },
      },
      { op: 'listTriggers', query: { automationId: '{{workflowId}}' } },
    ],
  },
  {
    name: 'Agents and channels',
    description:
      'An agent (spec section 11 fields) and an API channel for it (spec 5); the key is captured from the creation and again from the rotation, the only two responses that show it. The clean-up folder deletes both.',
    steps: [
      { op: 'listAgents' },
      {
        op: 'createAgent',
        json: {
          name: 'Postman agent',
          description: 'Created by the Postman collection; deleted at the end of the run.',
          instructions: 'Answer in one short sentence.',
          servers: [{ server: 'svc-sidekick' }],
          introMessage: 'Hello from Postman!',
        },
        captures: [
          { var: 'agentId', body: 'agentId' },
          { var: 'agentEtag', header: 'ETag' },
        ],
      },
      {
        op: 'getAgent',
        path: { agentId: '{{agentId}}' },
        captures: [{ var: 'agentEtag', header: 'ETag' }],
        checks: [{ body: 'agentId', equals: '{{agentId}}' }],
      },
      {
        op: 'updateAgent',
        note: 'Updates require If-Match with the current ETag (428 without, 412 when stale).',
        path: { agentId: '{{agentId}}' },
        headers: { 'If-Match': '{{agentEtag}}' },
        json: { instructions: 'Answer in one short, friendly sentence.' },
        checks: [{ body: 'version', equals: 2 }],
      },
      {
        op: 'createChannel',
        note: 'The channel key (apiKey) is shown only here and by rotate-key; it is captured as channelKey for the channel call.',
        json: { agentId: '{{agentId}}', name: 'Postman channel', outputFormat: 'markdown' },
        captures: [
          { var: 'channelTriggerId', body: 'triggerId' },
          { var: 'channelKey', body: 'apiKey' },
        ],
      },
      {
        op: 'getChannel',
        path: { triggerId: '{{channelTriggerId}}' },
        captures: [{ var: 'channelEtag', header: 'ETag' }],
        checks: [{ body: 'triggerId', equals: '{{channelTriggerId}}' }],
      },
      {
        op: 'updateChannel',
        note: "A channel's ETag is the epoch milliseconds of its last change (ChannelETag); If-Match works as for the other resources.",
        path: { triggerId: '{{channelTriggerId}}' },
        headers: { 'If-Match': '{{channelEtag}}' },
        json: { name: 'Postman channel (renamed)' },
        checks: [{ body: 'name', equals: 'Postman channel (renamed)' }],
      },
      {
        op: 'rotateChannelKey',
        note: 'The previous key stops working at once (spec "Authentication" 2); the new one is captured.',
        path: { triggerId: '{{channelTriggerId}}' },
        captures: [{ var: 'channelKey', body: 'apiKey' }],
        checks: [{ body: 'triggerId', equals: '{{channelTriggerId}}' }],
      },
      { op: 'listChannels', query: { agentId: '{{agentId}}' } },
      {
        op: 'listChats',
        query: { agentId: '{{agentId}}' },
        note: "The agent's chats, newest first; a new agent has none until its channel is called with a model configured.",
      },
      {
        op: 'getChat',
        name: 'Read a chat transcript (an unknown chat id answers 404)',
        path: { chatId: 'chat_00000000000000000000000000000000' },
        expect: 404,
        checks: [{ body: 'error', equals: 'not_found' }],
      },
    ],
  },
  {
    name: 'Run the demo workflow',
    description: 'Spec endpoints 1–4 on the demo workflow created on first start, with the trigger API key.',
    steps: [
      {
        op: 'callApiTrigger',
        name: 'Call the demo API trigger (async)',
        path: { triggerId: '{{demoApiTriggerId}}' },
        json: { name: 'Postman' },
        captures: [
          { var: 'runId', header: 'X-Pf-Run-Id' },
          { var: 'runAutomationId', header: 'X-Pf-Automation-Id' },
        ],
        checks: [{ body: '', equals: null }],
      },
      {
        op: 'getRunStatus',
        name: 'Poll the run status until it ends',
        note: 'Re-runs itself every 250 ms until the run ends (spec "Limits" recommends 2-5 s for real clients).',
        path: { automationId: '{{runAutomationId}}', runId: '{{runId}}' },
        pollUntil: { body: 'status', oneOf: TERMINAL, maxTries: 120, delayMs: 250 },
        checks: [{ body: 'status', equals: 'COMPLETE' }],
      },
      {
        op: 'getRunResults',
        path: { automationId: '{{runAutomationId}}', runId: '{{runId}}' },
        checks: [{ body: 'id', equals: '{{runId}}' }],
      },
      {
        op: 'listRuns',
        name: "List the demo workflow's runs (newest first)",
        query: { automationId: '{{runAutomationId}}', limit: '5' },
        checks: [{ body: 'items.0.runId', equals: '{{runId}}' }],
      },
      {
        op: 'getRun',
        name: 'Read the run with its steps (bearer token)',
        path: { runId: '{{runId}}' },
        checks: [
          { body: 'runId', equals: '{{runId}}' },
          { body: 'status', equals: 'COMPLETE' },
        ],
      },
      {
        op: 'callApiTrigger',
        name: 'Call the demo API trigger (sync, x-api-wait)',
        path: { triggerId: '{{demoApiTriggerId}}' },
        headers: { 'x-api-wait': 'true' },
        json: { name: 'Postman' },
        captures: [
          {
            signedUrl: 'designatedOutput.url',
            vars: { fileId: 'runFileId', expires: 'runFileExpires', signature: 'runFileSignature' },
          },
        ],
        checks: [{ body: 'status', equals: 'COMPLETE' }],
      },
      {
        op: 'downloadRunFile',
        name: 'Download the designated output (report.md)',
        path: { fileId: '{{runFileId}}' },
        query: { expires: '{{runFileExpires}}', signature: '{{runFileSignature}}' },
        checks: [{ textContains: 'Hello, Postman!' }],
      },
      { op: 'callApiTriggerWithQuery', path: { triggerId: '{{demoApiTriggerId}}' }, query: { name: 'Postman' } },
      { op: 'callWebhookTrigger', path: { triggerId: '{{demoWebhookTriggerId}}' }, json: { name: 'Postman' } },
      {
        op: 'callWebhookTriggerWithQuery',
        path: { triggerId: '{{demoWebhookTriggerId}}' },
        query: { name: 'Postman' },
      },
      {
        op: 'sendChannelMessage',
        expect: 503,
        path: { triggerId: '{{channelTriggerId}}' },
        note: 'Without DEFAULT_MODEL the server answers 503 model_not_configured, naming the settings; with a model configured this is 200 and the reply.',
        json: { message: 'Hello from Postman' },
      },
    ],
  },
  {
    name: 'Connections and application servers',
    description: 'Connections (PCIDs, spec 10) and application server registrations of the tool gateway.',
    steps: [
      { op: 'listUserConnections' },
      {
        op: 'createConnection',
        json: {
          name: 'Postman connection',
          service_key: 'postman',
          secret: 'example-token',
          metadata: { createdBy: 'postman' },
        },
        captures: [{ var: 'connectionId', body: 'id' }],
      },
      {
        op: 'getConnection',
        path: { connectionId: '{{connectionId}}' },
        captures: [{ var: 'connectionEtag', header: 'ETag' }],
      },
      {
        op: 'updateConnection',
        path: { connectionId: '{{connectionId}}' },
        headers: { 'If-Match': '{{connectionEtag}}' },
        json: { status: 'error' },
        checks: [{ body: 'status', equals: 'error' }],
      },
      { op: 'listConnections' },
      {
        op: 'createAppServer',
        note: 'Registration does not contact the upstream. The path is unique per run ({{$timestamp}}) so a re-run after an interrupted one does not conflict.',
        json: {
          path: 'postman-{{$timestamp}}',
          name: 'Postman example',
          service_key: 'postman',
          upstream: { type: 'mcp', url: 'https://mcp.example.com/postman', transport: 'streamable-http' },
          auth: { scheme: 'bearer' },
        },
        captures: [{ var: 'serverId', body: 'serverId' }],
      },
      { op: 'getAppServer', path: { serverId: '{{serverId}}' }, captures: [{ var: 'serverEtag', header: 'ETag' }] },
      {
        op: 'updateAppServer',
        path: { serverId: '{{serverId}}' },
        headers: { 'If-Match': '{{serverEtag}}' },
        json: { name: 'Postman example (renamed)' },
      },
      { op: 'listAppServers' },
    ],
  },
  {
    name: 'Tool gateway',
    description: 'JSON-RPC 2.0 over HTTP (spec 7-9) with the bearer token.',
    steps: [
      {
        op: 'postMcpMessage',
        name: 'Gateway: tools/list on the gateway server',
        path: { serverPath: 'gateway' },
        json: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
        checks: [{ body: 'result.tools', nonEmpty: true }],
      },
      {
        op: 'postMcpMessage',
        name: 'Gateway: listServers',
        path: { serverPath: 'mcp' },
        json: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'listServers', arguments: {} } },
      },
    ],
  },
  {
    name: 'Collections and resource events',
    description:
      'Spec section 14 and "Events": a datastore with an onEdit trigger URL on the demo API trigger, item writes, the trigger tests, the delivery log, and a filestore upload.',
    steps: [
      {
        op: 'createCollection',
        json: {
          name: 'Postman datastore',
          type: 'structured_datastore',
          description: 'Created by the Postman collection; deleted at the end of the run.',
        },
        captures: [
          { var: 'datastoreId', body: 'collectionId' },
          { var: 'collectionEtag', header: 'ETag' },
        ],
      },
      {
        op: 'getCollection',
        path: { collectionId: '{{datastoreId}}' },
        captures: [{ var: 'collectionEtag', header: 'ETag' }],
        checks: [{ body: 'collectionId', equals: '{{datastoreId}}' }],
      },
      {
        op: 'updateCollection',
        path: { collectionId: '{{datastoreId}}' },
        headers: { 'If-Match': '{{collectionEtag}}' },
        json: { name: 'Postman datastore (renamed)' },
      },
      {
        op: 'updateDataCollection',
        path: { collectionId: '{{datastoreId}}' },
        json: {
          triggerUrls: [
            { event: 'onEdit', url: '{{baseUrl}}/ext/triggers/{{demoApiTriggerId}}', apiKey: '{{apiKey}}' },
          ],
        },
        note: 'The demo API trigger is on this service, so the outbound policy allows it without OUTBOUND_ALLOWLIST.',
      },
      {
        op: 'createMemoryItem',
        query: { collectionId: '{{datastoreId}}' },
        json: {
          key: 'postman-{{$timestamp}}',
          content: { name: 'Ada', stage: 'lead' },
          metadata: { source: 'postman' },
        },
        captures: [{ var: 'memoryItemId', body: 'id' }],
      },
      {
        op: 'updateMemoryItem',
        path: { id: '{{memoryItemId}}' },
        query: { collectionId: '{{datastoreId}}' },
        json: { content: { stage: 'qualified' } },
        checks: [{ body: 'content.stage', equals: 'qualified' }],
      },
      {
        op: 'replaceMemoryItem',
        path: { id: '{{memoryItemId}}' },
        query: { collectionId: '{{datastoreId}}' },
        json: { content: { name: 'Ada', stage: 'won' }, triggerChanges: false },
      },
      {
        op: 'testMemoryTrigger',
        query: { collectionId: '{{datastoreId}}' },
        json: {
          url: '{{baseUrl}}/ext/triggers/{{demoApiTriggerId}}',
          apiKey: '{{apiKey}}',
          dataStoreId: '{{datastoreId}}',
          data: { name: 'Postman' },
        },
        checks: [{ body: 'log.event', equals: 'onTest' }],
      },
      {
        op: 'testDataCollectionTrigger',
        path: { collectionId: '{{datastoreId}}' },
        json: { event: 'onEdit', testData: { key: 'postman-test' } },
      },
      { op: 'listCollectionItems', path: { collectionId: '{{datastoreId}}' } },
      { op: 'listCollectionDeliveries', path: { collectionId: '{{datastoreId}}' } },
      { op: 'deleteMemoryItem', path: { id: '{{memoryItemId}}' }, query: { collectionId: '{{datastoreId}}' } },
      {
        op: 'createCollection',
        name: 'Create a filestore',
        json: { name: 'Postman filestore', type: 'filestore' },
        captures: [{ var: 'filestoreId', body: 'collectionId' }],
      },
      {
        op: 'uploadFilestorageItem',
        query: { collectionId: '{{filestoreId}}' },
        raw: {
          contentType: 'multipart/form-data; boundary=postman-boundary',
          text: '--postman-boundary\r\nContent-Disposition: form-data; name="file"; filename="hello.txt"\r\nContent-Type: text/plain\r\n\r\nHello from Postman\r\n--postman-boundary\r\nContent-Disposition: form-data; name="metadata"\r\n\r\n{"source":"postman"}\r\n--postman-boundary--\r\n',
        },
        captures: [{ var: 'fileItemId', body: 'id' }],
      },
      { op: 'deleteFilestorageItem', path: { id: '{{fileItemId}}' }, query: { collectionId: '{{filestoreId}}' } },
      { op: 'listCollections' },
      { op: 'deleteCollection', name: 'Delete the filestore', path: { collectionId: '{{filestoreId}}' } },
      { op: 'deleteCollection', path: { collectionId: '{{datastoreId}}' } },
    ],
  },
  {
    name: 'Saved browser logins',
    description:
      'Spec section 12 ("Browser task files"): a browser login state is saved (stored encrypted, never returned), read back, listed and deleted. Its id is what `useContextService` of browser-automation_playwright_run takes.',
    steps: [
      {
        op: 'createBrowserLogin',
        json: {
          label: 'Postman login',
          service: 'example.com',
          loginUrl: 'https://example.com/login',
          storageState: {
            cookies: [{ name: 'sid', value: 'postman', domain: 'example.com', path: '/', expires: -1 }],
            origins: [],
          },
        },
        captures: [{ var: 'browserLoginId', body: 'id' }],
        checks: [{ body: 'status', equals: 'active' }],
      },
      {
        op: 'getBrowserLogin',
        path: { loginId: '{{browserLoginId}}' },
        checks: [{ body: 'id', equals: '{{browserLoginId}}' }],
      },
      { op: 'listBrowserLogins' },
      { op: 'listBrowserTasks' },
      {
        op: 'getBrowserTask',
        name: 'Read a browser task (an unknown session id answers 404)',
        path: { sessionId: 'ses_00000000000000000000000000000000' },
        expect: 404,
        checks: [{ body: 'error', equals: 'not_found' }],
      },
      { op: 'deleteBrowserLogin', path: { loginId: '{{browserLoginId}}' } },
    ],
  },
  {
    name: 'Queues and CSV batches',
    description:
      'Spec section 15: a queue on the demo API trigger, paused and resumed with If-Match, then a CSV file uploaded to a presigned URL and loaded as a batch whose rows run the demo workflow; its items, batches and skipped row are read back. The clean-up folder deletes the queue.',
    steps: [
      { op: 'listQueues' },
      {
        op: 'createQueue',
        json: {
          name: 'Postman queue',
          description: 'Created by the Postman collection; deleted at the end of the run.',
          triggerId: '{{demoApiTriggerId}}',
          concurrencyLimit: 3,
          priority: 7,
          maxRetries: 1,
        },
        captures: [
          { var: 'queueId', body: 'queueId' },
          { var: 'queueEtag', header: 'ETag' },
        ],
        checks: [{ body: 'paused', equals: false }],
      },
      {
        op: 'getQueue',
        path: { queueId: '{{queueId}}' },
        captures: [{ var: 'queueEtag', header: 'ETag' }],
        checks: [{ body: 'queueId', equals: '{{queueId}}' }],
      },
      {
        op: 'updateQueue',
        name: 'Pause the queue',
        note: 'Runs in flight finish; no new run starts until the queue is resumed. Updates require If-Match with the current ETag (428 without, 412 when stale).',
        path: { queueId: '{{queueId}}' },
        headers: { 'If-Match': '{{queueEtag}}' },
        json: { paused: true },
        captures: [{ var: 'queueEtag', header: 'ETag' }],
        checks: [{ body: 'paused', equals: true }],
      },
      {
        op: 'updateQueue',
        name: 'Resume the queue with a higher limit',
        path: { queueId: '{{queueId}}' },
        headers: { 'If-Match': '{{queueEtag}}' },
        json: { paused: false, concurrencyLimit: 5 },
        checks: [
          { body: 'paused', equals: false },
          { body: 'concurrencyLimit', equals: 5 },
        ],
      },
      {
        op: 'createCsvUploadUrl',
        note: 'The declared size is an upper bound: the file sent may be smaller. The URL is split into csvKey, expires and signature for the next request.',
        path: { queueId: '{{queueId}}' },
        json: { filename: 'postman.csv', sizeBytes: 64 },
        captures: [
          {
            signedUrl: 'uploadUrl',
            vars: { fileId: 'csvKey', expires: 'csvUploadExpires', signature: 'csvUploadSignature' },
          },
        ],
        checks: [{ body: 'method', equals: 'PUT' }],
      },
      {
        op: 'uploadCsvFile',
        note: 'Two good rows and one with a column too many (row 4), which the batch skips.',
        path: { csvKey: '{{csvKey}}' },
        query: { expires: '{{csvUploadExpires}}', signature: '{{csvUploadSignature}}' },
        raw: { contentType: 'text/csv', text: 'name\nAda\nGrace\nx,y\n' },
        checks: [{ body: 'csvKey', equals: '{{csvKey}}' }],
      },
      {
        op: 'createCsvBatch',
        path: { queueId: '{{queueId}}' },
        json: { csvKey: '{{csvKey}}', triggerId: '{{demoApiTriggerId}}' },
        captures: [{ var: 'batchId', body: 'batchId' }],
        checks: [{ body: 'totalRows', equals: 3 }],
      },
      {
        op: 'getQueueBatch',
        name: 'Poll the batch until it finishes',
        note: 'Re-runs itself every 250 ms until the batch is completed, failed or cancelled.',
        path: { queueId: '{{queueId}}', batchId: '{{batchId}}' },
        pollUntil: { body: 'status', oneOf: ['completed', 'failed', 'cancelled'], maxTries: 120, delayMs: 250 },
        checks: [
          { body: 'status', equals: 'completed' },
          { body: 'runsCompleted', equals: 2 },
          { body: 'skippedRows', equals: 1 },
        ],
      },
      {
        op: 'listQueueItems',
        path: { queueId: '{{queueId}}' },
        query: { batchId: '{{batchId}}' },
        checks: [
          { body: 'items.0.status', equals: 'completed' },
          { body: 'items.0.payload.name', equals: 'Ada' },
          { body: 'items.1.payload.name', equals: 'Grace' },
        ],
      },
      {
        op: 'listQueueBatches',
        path: { queueId: '{{queueId}}' },
        checks: [{ body: 'items.0.batchId', equals: '{{batchId}}' }],
      },
      {
        op: 'listBatchRowErrors',
        path: { queueId: '{{queueId}}', batchId: '{{batchId}}' },
        checks: [
          { body: 'items.0.rowNumber', equals: 4 },
          { body: 'items.0.reason', equals: 'column_count' },
        ],
      },
      {
        op: 'cancelQueueBatch',
        expect: 409,
        note: 'The batch has completed, so it can no longer be cancelled (409 batch_finished); a batch still validating, pending or running answers 200 and stops.',
        path: { queueId: '{{queueId}}', batchId: '{{batchId}}' },
        checks: [{ body: 'error', equals: 'batch_finished' }],
      },
    ],
  },
  {
    name: 'Clean up',
    description: 'Deletes and revokes what this run created, last, so every earlier request had its ids.',
    steps: [
      {
        op: 'deleteQueue',
        note: 'Its uploads, batches and items go with it; runs it started stay.',
        path: { queueId: '{{queueId}}' },
      },
      { op: 'deleteAppServer', path: { serverId: '{{serverId}}' } },
      { op: 'deleteConnection', path: { connectionId: '{{connectionId}}' } },
      { op: 'deleteChannel', path: { triggerId: '{{channelTriggerId}}' } },
      {
        op: 'deleteAgent',
        note: 'Deleting an agent also deletes its channels and chats (foreign keys, ON DELETE CASCADE).',
        path: { agentId: '{{agentId}}' },
      },
      { op: 'deleteTrigger', path: { triggerId: '{{triggerId}}' } },
      { op: 'deleteWorkflow', path: { automationId: '{{workflowId}}' } },
      { op: 'revokeApiKey', path: { keyId: '{{keyId}}' }, checks: [{ body: 'id', equals: '{{keyId}}' }] },
      {
        op: 'revokeCredential',
        note: 'Revokes the credential this run created, never the one the collection signs in with.',
        path: { credentialId: '{{credentialId}}' },
        checks: [{ body: 'id', equals: '{{credentialId}}' }],
      },
    ],
  },
];
