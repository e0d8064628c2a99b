/**
 * The console's one API client: the generated SDK (generated/openapi/client.ts) on the
 * service's own origin, with the runtime token added to every management call.
 *
 * The token comes from `POST /oauth/token` (spec section 6) and is kept in memory and in
 * sessionStorage (this tab only); the client secret that bought it is never kept anywhere.
 * A call answered 401 while signed in (the token expired or its credential was revoked) opens
 * the sign-in dialog over the current page and is sent again once a new token is there.
 */
import {
  createSwitchyardClient,
  type ApiError,
  type OAuthError,
  type OAuthTokenResponse,
} from '../../generated/openapi/client.ts';
import { SERVICE_BASE, SERVICE_URL, servicePath } from './base.ts';

export interface Session {
  token: string;
  expiresAt: number;
  orgId: string;
  clientId: string;
}

/** One session per service: two services mounted on one origin keep their own. */
const STORAGE_KEY = `switchyard.console.session${SERVICE_BASE === '' ? '' : `:${SERVICE_BASE}`}`;

/** Client id and organisation of the last sign-in, offered again in the form (never the secret). */
export interface SignInHint {
  clientId: string;
  orgId: string;
}

function readStored(): Session | undefined {
  try {
    const s = JSON.parse(sessionStorage.getItem(STORAGE_KEY) ?? 'null') as Session | null;
    if (s && typeof s.token === 'string' && s.expiresAt > Date.now()) return s;
  } catch {
    // An unreadable entry is no session.
  }
  return undefined;
}

let session: Session | undefined = readStored();
const listeners = new Set<() => void>();

export function currentSession(): Session | undefined {
  return session;
}

export function onSessionChange(fn: () => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function setSession(next: Session | undefined): void {
  session = next;
  if (next) sessionStorage.setItem(STORAGE_KEY, JSON.stringify(next));
  else sessionStorage.removeItem(STORAGE_KEY);
  for (const fn of listeners) fn();
}

export function signOut(): void {
  setSession(undefined);
  hint = undefined;
}

let hint: SignInHint | undefined;
export function signInHint(): SignInHint | undefined {
  return hint ?? (session ? { clientId: session.clientId, orgId: session.orgId } : undefined);
}

/** An API answer that is not a success, in the spec's error shape (or the OAuth one). */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'ApiFailure';
  }
}

/** The failure of an answer: its error object when it has one, else the HTTP status. */
export function failureOf(response: Response, body: unknown): ApiFailure {
  const b = body as Partial<ApiError & OAuthError> | undefined;
  if (b && typeof b === 'object' && typeof b.error === 'string') {
    const message = b.message ?? b.error_description ?? response.statusText;
    return new ApiFailure(response.status, b.error, message, b.details);
  }
  return new ApiFailure(
    response.status,
    `http_${response.status}`,
    `The service answered ${response.status} ${response.statusText}`,
  );
}

/**
 * Exchanges a client id and secret for a runtime token (client_credentials, scope
 * `org:<organisation id>`). The secret is used for this one request and dropped.
 */
export async function signIn(clientId: string, clientSecret: string, orgId: string): Promise<void> {
  const { data, error, response } = await api.POST('/oauth/token', {
    body: { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret, scope: `org:${orgId}` },
    bodySerializer: (body) => new URLSearchParams(body as Record<string, string>),
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
  });
  if (!data) throw failureOf(response, error);
  const token = data as OAuthTokenResponse;
  setSession({ token: token.access_token, expiresAt: Date.now() + token.expires_in * 1000, orgId, clientId });
  const waiting = pendingSignIn;
  pendingSignIn = undefined;
  waiting?.resolve();
}

interface Pending {
  promise: Promise<void>;
  resolve: () => void;
}
let pendingSignIn: Pending | undefined;
const signInRequested = new Set<() => void>();

/** The dialog listens here: a call needs a new token. */
export function onSignInRequested(fn: () => void): () => void {
  signInRequested.add(fn);
  return () => signInRequested.delete(fn);
}

/** Whether a call is waiting for a new sign-in (the dialog is open). */
export function signInPending(): boolean {
  return pendingSignIn !== undefined;
}

function needNewToken(): Promise<void> {
  if (!pendingSignIn) {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    pendingSignIn = { promise, resolve };
    if (session) hint = { clientId: session.clientId, orgId: session.orgId };
    session = undefined;
    sessionStorage.removeItem(STORAGE_KEY);
    for (const fn of signInRequested) fn();
  }
  return pendingSignIn.promise;
}

/** Calls that carry their own credential (trigger keys, client secrets) and never the token. */
const OWN_CREDENTIAL = /^\/(oauth\/token|auth\/token|ext\/|files\/)/;

const retries = new Map<string, Request>();

// No cookies or HTTP authentication: with credentials omitted, a 401 of the token endpoint
// (which names the Basic scheme, RFC 6749 section 5.2) is an answer the page shows, never the
// browser's own password prompt.
export const api = createSwitchyardClient({ baseUrl: SERVICE_URL, credentials: 'omit' });

api.use({
  onRequest({ request, id }) {
    if (OWN_CREDENTIAL.test(servicePath(new URL(request.url).pathname))) return request;
    if (session) request.headers.set('Authorization', `Bearer ${session.token}`);
    retries.set(id, request.clone());
    return request;
  },
  async onResponse({ response, id }) {
    const again = retries.get(id);
    retries.delete(id);
    if (response.status !== 401 || !again) return response;
    await needNewToken();
    const retry = new Request(again, { credentials: 'omit' });
    retry.headers.set('Authorization', `Bearer ${session!.token}`);
    return fetch(retry);
  },
  onError({ id }) {
    retries.delete(id);
  },
});

/** The data of an answer, or its failure thrown. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let r: { data?: T; error?: unknown; response: Response };
  try {
    r = await call;
  } catch (err) {
    throw new ApiFailure(
      0,
      'network_error',
      `The service could not be reached: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  if (r.response.ok) return r.data as T;
  throw failureOf(r.response, r.error);
}
