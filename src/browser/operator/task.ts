/**
 * `operator_run` from the arguments to the end state (README.md in this folder). Planning
 * happens before the task is recorded, so what the caller can fix is answered at once: the
 * model (the requested one, else DEFAULT_MODEL, else a clear error), `cua` mode, the saved
 * login, the files to upload (fetched through the outbound policy). Arguments that need
 * infrastructure this installation lacks are written in the log as not applied.
 */
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { LanguageModel } from 'ai';
import { lookup as mimeLookup } from 'mime-types';
import type { Config } from '../../config/index.js';
import { AppError } from '../../errors/index.js';
import { outboundRequest, OutboundError, type OutboundPolicy } from '../../kernel/outbound.js';
import { resolveModel } from '../../agents/index.js';
import { loginState, type StorageState } from '../logins.js';
import type { Lease } from '../pool.js';
import { DEFAULT_VIEWPORT, SCRIPT_LIMITS } from '../scripts.js';
import type { RunningTask, TaskOutcome } from '../service.js';
import { TaskError } from '../errors.js';
import type { AgentMode, UploadFile } from './actions.js';
import { countHit, lookupEntry, saveEntry, taskHash, type CacheSlot } from './cache.js';
import { runOperator } from './session.js';
import { replayScript } from './replay-script.js';
import type { Page } from 'playwright-core';

/** operator_run's arguments (schemas/tools/browser-automation, spec section 12), validated by the gateway. */
export interface OperatorArgs {
  task: string;
  cacheKey: string;
  model?: string | undefined;
  agentMode?: 'dom' | 'hybrid' | 'cua' | undefined;
  maxSteps?: number | undefined;
  systemPrompt?: string | undefined;
  region?: string | undefined;
  proxies?: boolean | undefined;
  advancedStealth?: boolean | undefined;
  blockAds?: boolean | undefined;
  solveCaptchas?: boolean | undefined;
  recordSession?: boolean | undefined;
  viewportWidth?: number | undefined;
  viewportHeight?: number | undefined;
  filesToUpload?: Array<{ url: string; fileName: string }> | undefined;
  collectionId?: string | undefined;
  useContextService?: string | undefined;
  disableCache?: boolean | undefined;
  cacheDurationDays?: number | undefined;
}

export interface OperatorDeps {
  db: Knex;
  config: Config;
  policy: OutboundPolicy;
  /** The cache's clock (epoch ms); tests move it to expire entries. */
  now(): number;
}

export interface OperatorPlan {
  buildId: string;
  task: string;
  mode: AgentMode;
  maxSteps: number;
  systemPrompt?: string | undefined;
  viewport: { width: number; height: number };
  uploads: UploadFile[];
  login?: { id: string; state: StorageState } | undefined;
  blockAds: boolean;
  recordSession: boolean;
  startUrl: string | null;
  /** The cache slot, or why the cache is not used. */
  cache: { slot: CacheSlot; days: number } | { off: string };
  model: LanguageModel;
  modelId: string;
  /** Lines the log starts with: the model used, arguments not applied. */
  notes: string[];
  /** proxies: true with BROWSER_PROXY_URL set. */
  viaProxy: boolean;
}

export const DEFAULT_OPERATOR_MODEL = 'google/gemini-3-flash-preview';
/**
 * The spec's model names that are not the provider's API id: Anthropic's API knows Claude Sonnet
 * 4 as `claude-sonnet-4-0` (an alias of claude-sonnet-4-20250514). The others are API ids as written.
 */
const API_IDS: Record<string, string> = { 'anthropic/claude-sonnet-4': 'anthropic/claude-sonnet-4-0' };
const apiId = (m: string) => API_IDS[m] ?? m;
const DEFAULT_MAX_STEPS = 30;
const DEFAULT_CACHE_DAYS = 7;
const UPLOAD_TIMEOUT_MS = 30_000;

/** The URL the task starts on: the first http(s) URL in its text, without trailing punctuation. */
export function startUrlOf(task: string): string | null {
  const m = /https?:\/\/[^\s"'<>()]+/i.exec(task);
  if (!m) return null;
  const url = m[0].replace(/[.,;:!?\]}]+$/, '');
  try {
    return new URL(url).href;
  } catch {
    return null;
  }
}

function pickModel(
  config: Config,
  orgId: string,
  requested: string,
  notes: string[],
): { model: LanguageModel; modelId: string } {
  try {
    return resolveModel(config.models, orgId, apiId(requested));
  } catch (err) {
    const fallback = config.models.defaultModel;
    if (
      !(err instanceof AppError) ||
      err.key !== 'ERR_AGENT_MODEL_NOT_CONFIGURED' ||
      !fallback ||
      fallback === requested
    )
      throw err;
    const resolved = resolveModel(config.models, orgId, null);
    notes.push(
      `model: ${requested} is not configured on this server (${err.message.split('. ')[0]}); running DEFAULT_MODEL ${resolved.modelId}`,
    );
    return resolved;
  }
}

/**
 * cua needs a computer-use model: Anthropic's (the computer tool), the requested model when it
 * is one, else DEFAULT_MODEL when that is one. Anything else is a clear refusal.
 */
function pickCuaModel(
  config: Config,
  orgId: string,
  requested: string,
  notes: string[],
): { model: LanguageModel; modelId: string } {
  const candidate = [requested, config.models.defaultModel].find(
    (m): m is string => typeof m === 'string' && m.startsWith('anthropic/'),
  );
  if (!candidate) {
    throw new TaskError(
      `agentMode cua needs a computer-use model: an anthropic/ model such as anthropic/claude-sonnet-4 (Anthropic's computer tool, with ANTHROPIC_API_KEY set on the server). ${requested} is not one${config.models.defaultModel ? `, nor is DEFAULT_MODEL ${config.models.defaultModel}` : ''}. Use agentMode hybrid (page structure plus screenshots and coordinate clicks) or dom with any model.`,
    );
  }
  const resolved = resolveModel(config.models, orgId, apiId(candidate));
  notes.push(
    candidate === requested
      ? `model: ${candidate} (computer use)`
      : `model: ${requested} has no computer use; running DEFAULT_MODEL ${candidate} (computer use)`,
  );
  return resolved;
}

async function fetchUploads(
  policy: OutboundPolicy,
  orgId: string,
  list: Array<{ url: string; fileName: string }>,
): Promise<UploadFile[]> {
  if (list.length > SCRIPT_LIMITS.files)
    throw new TaskError(`filesToUpload lists ${list.length} files; at most ${SCRIPT_LIMITS.files} are allowed.`);
  const names = new Set<string>();
  for (const f of list) {
    if (names.has(f.fileName))
      throw new TaskError(`filesToUpload names ${JSON.stringify(f.fileName)} twice; file names must be unique.`);
    names.add(f.fileName);
    if (!/^https?:\/\//i.test(f.url))
      throw new TaskError(`filesToUpload: ${JSON.stringify(f.fileName)} has a URL that is not http(s).`);
  }
  return Promise.all(
    list.map(async (f) => {
      try {
        const res = await outboundRequest(
          f.url,
          {
            orgId,
            method: 'GET',
            headers: { accept: '*/*' },
            timeoutMs: UPLOAD_TIMEOUT_MS,
            maxResponseBytes: SCRIPT_LIMITS.fileBytes,
          },
          policy,
        );
        if (res.status < 200 || res.status > 299)
          throw new TaskError(`filesToUpload: fetching ${JSON.stringify(f.fileName)} answered HTTP ${res.status}.`);
        const type = String(res.headers['content-type'] ?? '')
          .split(';')[0]!
          .trim();
        return {
          name: f.fileName,
          buffer: res.body,
          mimeType:
            type && type !== 'application/octet-stream' ? type : mimeLookup(f.fileName) || 'application/octet-stream',
        };
      } catch (err) {
        if (err instanceof TaskError) throw err;
        const why = err instanceof OutboundError ? err.message : (err as Error).message;
        throw new TaskError(`filesToUpload: ${JSON.stringify(f.fileName)} could not be fetched: ${why}`);
      }
    }),
  );
}

export async function planOperator(deps: OperatorDeps, orgId: string, args: OperatorArgs): Promise<OperatorPlan> {
  const notes: string[] = [];
  const mode = args.agentMode ?? 'hybrid';
  const requested = args.model ?? DEFAULT_OPERATOR_MODEL;
  const { model, modelId } =
    mode === 'cua'
      ? pickCuaModel(deps.config, orgId, requested, notes)
      : pickModel(deps.config, orgId, requested, notes);
  if (mode !== 'cua' && modelId === apiId(requested)) notes.push(`model: ${modelId}`);
  let login: OperatorPlan['login'];
  if (args.useContextService !== undefined) {
    const state = await loginState(deps.db, deps.config.secretKey, orgId, args.useContextService);
    if (!state)
      throw new TaskError(
        `No saved login ${args.useContextService} exists in this organisation (browser-automation_logins_list lists them).`,
      );
    login = { id: args.useContextService, state };
    notes.push(`starting from saved login ${login.id} (${state.cookies.length} cookies)`);
  }
  const uploads = await fetchUploads(deps.policy, orgId, args.filesToUpload ?? []);
  for (const u of uploads) notes.push(`file to upload: ${u.name} (${u.buffer.length} bytes, ${u.mimeType})`);

  if (args.region !== undefined)
    notes.push(`region ${args.region}: not applied; the browser runs on this server, in its own network`);
  const viaProxy = args.proxies === true && deps.config.browser.proxyUrl !== null;
  if (viaProxy)
    notes.push(
      `proxies: through BROWSER_PROXY_URL (${new URL(deps.config.browser.proxyUrl!).host}), after the outbound guard`,
    );
  else if (args.proxies === true)
    notes.push(
      'proxies: not applied; BROWSER_PROXY_URL is not set on this server (traffic goes through its outbound guard directly)',
    );
  if (args.advancedStealth === true)
    notes.push('advancedStealth: not applied; this server runs stock headless Chromium');
  if (args.solveCaptchas !== false)
    notes.push('solveCaptchas: not applied; no CAPTCHA solver is available here (a CAPTCHA stops the task)');

  const startUrl = startUrlOf(args.task);
  const hash = taskHash(args.task, startUrl);
  const buildId = `bld_${createHash('sha256').update(`${args.cacheKey}\u0000${hash}`).digest('hex').slice(0, 24)}`;
  const cache: OperatorPlan['cache'] =
    args.disableCache === true
      ? { off: 'disableCache is true' }
      : /screenshot/i.test(args.task)
        ? { off: 'the task mentions a screenshot' }
        : {
            slot: { orgId, cacheKey: args.cacheKey, taskHash: hash },
            days: args.cacheDurationDays ?? DEFAULT_CACHE_DAYS,
          };

  return {
    buildId,
    task: args.task,
    mode,
    maxSteps: args.maxSteps ?? DEFAULT_MAX_STEPS,
    systemPrompt: args.systemPrompt,
    viewport: {
      width: args.viewportWidth ?? DEFAULT_VIEWPORT.width,
      height: args.viewportHeight ?? DEFAULT_VIEWPORT.height,
    },
    uploads,
    login,
    blockAds: args.blockAds !== false,
    recordSession: args.recordSession !== false,
    startUrl,
    cache,
    model,
    modelId,
    notes,
    viaProxy,
  };
}

export type AdBlock = { describe: string; enable(page: Page): Promise<void> } | { unavailable: string };

export async function executeOperator(
  deps: OperatorDeps,
  lease: Lease,
  plan: OperatorPlan,
  {
    t,
    adblock,
    upstreamProxy,
  }: { t: RunningTask; adblock: () => Promise<AdBlock>; upstreamProxy: () => Promise<string> },
): Promise<TaskOutcome> {
  let cached;
  if ('slot' in plan.cache) {
    cached = await lookupEntry(deps.db, deps.config.secretKey, plan.cache.slot, deps.now());
    t.log(
      cached
        ? `cache: entry found (${cached.steps.length} steps, build ${plan.buildId})`
        : `cache: no live entry for build ${plan.buildId}`,
    );
  } else {
    t.log(`cache: off (${plan.cache.off})`);
  }
  let blockAds: ((page: Page) => Promise<void>) | undefined;
  if (plan.blockAds) {
    const blocker = await adblock();
    if ('enable' in blocker) {
      blockAds = (page) => blocker.enable(page);
      t.log(`blockAds: on (${blocker.describe})`);
    } else {
      t.log(`blockAds: not applied (${blocker.unavailable})`);
    }
  }
  t.status(cached ? 'Replaying the cached steps.' : 'Step 1: looking at the page.');
  const { outcome, files } = await runOperator(
    lease,
    {
      sessionId: t.id,
      task: plan.task,
      mode: plan.mode,
      maxSteps: plan.maxSteps,
      systemPrompt: plan.systemPrompt,
      viewport: plan.viewport,
      uploads: plan.uploads,
      storageState: plan.login?.state,
      recordSession: plan.recordSession,
      startUrl: plan.startUrl,
      cached,
      blockAds,
      proxyUrl: plan.viaProxy ? await upstreamProxy() : undefined,
    },
    { model: plan.model, signal: t.limit, log: t.log, status: t.status },
  );
  t.log(`model calls: ${outcome.modelCalls}`);
  if (!outcome.ok) return { ok: false, result: outcome.result, files };

  let note: string;
  if (!('slot' in plan.cache)) {
    note = `Cache off: ${plan.cache.off}.`;
  } else if (outcome.cache === 'HIT') {
    await countHit(deps.db, plan.cache.slot);
    note = `Cache HIT: the recorded steps were replayed with no model call (build ${plan.buildId}).`;
  } else if (outcome.record) {
    await saveEntry(deps.db, deps.config.secretKey, plan.cache.slot, {
      entry: outcome.record,
      days: plan.cache.days,
      now: deps.now(),
    });
    note =
      outcome.cache === 'HEALED'
        ? `Cache HEALED: ${outcome.healed || 'changed steps were re-inferred'} (${outcome.modelCalls} model call${outcome.modelCalls === 1 ? '' : 's'}) and the entry was rewritten (build ${plan.buildId}).`
        : `Cache MISS: the task ran live (${outcome.modelCalls} model call${outcome.modelCalls === 1 ? '' : 's'}); its ${outcome.record.steps.length} steps are cached for ${plan.cache.days} days (build ${plan.buildId}).`;
  } else {
    note = `Cache ${outcome.cache ?? 'MISS'}: the task ran live (${outcome.modelCalls} model calls) and was not cached (a step could not be recorded by a stable locator, or took a screenshot).`;
  }
  t.log(note);
  // The build's replay script: what the cache replays, as a playwright_run script.
  const entry = outcome.cache === 'HIT' ? cached : outcome.record;
  if (entry && 'slot' in plan.cache) {
    const fileName = `replay-${plan.buildId}.js`;
    files.push({
      fileName,
      data: Buffer.from(
        replayScript(entry, { task: plan.task, buildId: plan.buildId, viewport: plan.viewport }),
        'utf8',
      ),
      source: 'extract',
      mimeType: 'text/javascript',
    });
    t.log(`replay script saved as ${fileName} (run it with browser-automation_playwright_run)`);
  }
  return { ok: true, result: outcome.result, files, message: `Task completed. ${note}` };
}
