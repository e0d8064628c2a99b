/**
 * One catalogue of errors. Each entry has a stable wire code, an HTTP
 * status and a JSON-RPC code; renderers turn an AppError into the wire shape of the surface
 * that raised it. Messages never contain secrets.
 */
export const catalogue = {
  // generic request errors
  ERR_REQUEST_MALFORMED_JSON: {
    status: 400,
    code: 'malformed_json',
    rpc: -32700,
    message: 'The request body is not valid JSON',
  },
  ERR_REQUEST_INVALID: { status: 400, code: 'invalid_request', rpc: -32602, message: 'The request is invalid' },
  ERR_REQUEST_UNSUPPORTED_MEDIA: {
    status: 415,
    code: 'unsupported_media_type',
    rpc: -32000,
    message: 'Unsupported Content-Type',
  },
  ERR_REQUEST_TOO_LARGE: {
    status: 413,
    code: 'payload_too_large',
    rpc: -32000,
    message: 'The request body is too large',
  },
  ERR_ROUTE_NOT_FOUND: { status: 404, code: 'not_found', rpc: -32601, message: 'No such endpoint' },
  ERR_CONSOLE_NOT_BUILT: {
    status: 503,
    code: 'console_not_built',
    rpc: -32603,
    message: 'The web console is not built here: run `npm run build` (console/README.md)',
  },
  ERR_METHOD_NOT_ALLOWED: {
    status: 405,
    code: 'method_not_allowed',
    rpc: -32601,
    message: 'Method not allowed on this endpoint',
  },
  ERR_NOT_IMPLEMENTED: { status: 501, code: 'not_implemented', rpc: -32603, message: 'Not implemented' },
  ERR_INTERNAL: { status: 500, code: 'internal_error', rpc: -32603, message: 'Internal error' },
  ERR_UNAVAILABLE: { status: 503, code: 'unavailable', rpc: -32603, message: 'Service unavailable' },
  // Embedded under another server (src/embed.ts): a deployment fault, not a client error.
  ERR_BODY_ALREADY_READ: {
    status: 500,
    code: 'body_already_read',
    rpc: -32603,
    message:
      'The request body was already read by middleware that runs before Switchyard (such as express.json()); mount Switchyard before any body parser',
  },

  // authentication and authorisation
  ERR_AUTH_MISSING_TOKEN: {
    status: 401,
    code: 'missing_token',
    rpc: -32000,
    message: 'Authorization: Bearer <token> is required',
  },
  ERR_AUTH_INVALID_TOKEN: {
    status: 401,
    code: 'invalid_token',
    rpc: -32000,
    message: 'The runtime token is invalid or expired',
  },
  ERR_AUTH_ORG_MISMATCH: {
    status: 403,
    code: 'org_mismatch',
    rpc: -32000,
    message: 'X-Selected-Org does not match the token organisation',
  },
  ERR_AUTH_MISSING_API_KEY: { status: 401, code: 'missing_api_key', rpc: -32000, message: 'The API key is missing' },
  ERR_AUTH_INVALID_API_KEY: { status: 401, code: 'invalid_api_key', rpc: -32000, message: 'The API key is invalid' },

  // triggers and runs (spec sections 1-4)
  ERR_TRIGGER_NOT_FOUND: {
    status: 404,
    code: 'trigger_not_found',
    rpc: -32000,
    message: 'No such trigger for this API key',
  },
  ERR_ADMIN_REQUIRED: {
    status: 403,
    code: 'admin_required',
    rpc: -32000,
    message: "This operation is reserved to the installation's administrator organisations (ADMIN_ORG_IDS)",
  },
  ERR_TRIGGER_DISABLED: { status: 403, code: 'trigger_disabled', rpc: -32000, message: 'This trigger is disabled' },
  ERR_RUN_NOT_FOUND: { status: 404, code: 'run_not_found', rpc: -32000, message: 'No such run for this API key' },
  ERR_INPUTS_INVALID: {
    status: 400,
    code: 'invalid_inputs',
    rpc: -32602,
    message: "The inputs do not match the workflow's input schema",
  },

  // management resources
  ERR_NOT_FOUND: { status: 404, code: 'not_found', rpc: -32000, message: 'Resource not found' },
  ERR_VERSION_CONFLICT: {
    status: 412,
    code: 'version_conflict',
    rpc: -32000,
    message: 'The resource was changed by someone else; reload it and retry with its current version',
  },
  ERR_PRECONDITION_REQUIRED: {
    status: 428,
    code: 'precondition_required',
    rpc: -32000,
    message: 'If-Match with the current version (ETag) is required for updates',
  },
  ERR_CONFLICT: { status: 409, code: 'conflict', rpc: -32000, message: 'The resource conflicts with an existing one' },
  ERR_LAST_CREDENTIAL: {
    status: 409,
    code: 'last_active_credential',
    rpc: -32000,
    message:
      "This is the organisation's last active credential: revoking it would lock the organisation out of the API. Create another credential first (POST /v1/credentials), or revoke it at the store with `switchyard credentials revoke <id> --force`",
  },
  ERR_LAST_API_KEY: {
    status: 409,
    code: 'last_active_api_key',
    rpc: -32000,
    message:
      "This is the organisation's last active API key and enabled triggers still need one. Create another key first (POST /v1/api-keys), or revoke it at the store with `switchyard keys revoke <id> --force`",
  },
  ERR_INVALID_CURSOR: { status: 400, code: 'invalid_cursor', rpc: -32602, message: 'The pagination cursor is invalid' },
  ERR_INVALID_STATUSES: {
    status: 400,
    code: 'invalid_statuses',
    rpc: -32602,
    message: 'statuses must be a comma-separated list of connected, error, disconnected',
  },

  // trigger attachments (spec "Attachment", "Errors" and "Limits"; statuses decided in openapi/triggers.yaml)
  ERR_ATTACHMENT_TOO_MANY: { status: 400, code: 'too_many_attachments', rpc: -32000, message: 'Too many attachments' },
  ERR_ATTACHMENT_FILE_TOO_LARGE: { status: 413, code: 'file_too_large', rpc: -32000, message: 'File too large' },
  ERR_ATTACHMENT_TOTAL_TOO_LARGE: {
    status: 413,
    code: 'attachments_too_large',
    rpc: -32000,
    message: 'Total attachment size exceeds limit',
  },
  ERR_ATTACHMENT_BLOCKED_TYPE: { status: 415, code: 'blocked_file_type', rpc: -32000, message: 'Blocked file type' },
  ERR_MULTIPART_INVALID: {
    status: 400,
    code: 'invalid_multipart',
    rpc: -32602,
    message: 'The multipart body is malformed',
  },
  ERR_MULTIPART_TOO_MANY_FIELDS: {
    status: 400,
    code: 'too_many_fields',
    rpc: -32602,
    message: 'Too many form fields (at most 1000)',
  },
  ERR_MULTIPART_FIELD_TOO_LARGE: {
    status: 400,
    code: 'field_too_large',
    rpc: -32602,
    message: 'A form field is too large (name at most 1 KiB, value at most 1 MiB)',
  },

  // tool gateway (spec section 7, Errors: validation, timeout, unsupported media → -32000; openapi/gateway.yaml)
  ERR_NOT_ACCEPTABLE: {
    status: 406,
    code: 'not_acceptable',
    rpc: -32000,
    message: 'Accept must include application/json',
  },
  ERR_GATEWAY_UNKNOWN_SERVER: { status: 404, code: 'unknown_server', rpc: -32000, message: 'Unknown server path' },

  // agents and the agent API channel (spec section 11, "Agent API channel", Errors)
  ERR_CHANNEL_UNOWNED_CHAT: {
    status: 403,
    code: 'unowned_chat_id',
    rpc: -32000,
    message: 'The chatId does not belong to this channel',
  },
  ERR_AGENT_MODEL_NOT_CONFIGURED: {
    status: 503,
    code: 'model_not_configured',
    rpc: -32000,
    message: 'No language model is configured',
  },
  ERR_AGENT_PUBLIC_NEEDS_RELEASE: {
    status: 409,
    code: 'release_required',
    rpc: -32000,
    message: 'Publish a release (agent_publish_release) before making the agent a public template',
  },

  // collections and their event triggers (openapi/resources.yaml, spec section 14)
  ERR_COLLECTION_NOT_FOUND: {
    status: 404,
    code: 'collection_not_found',
    rpc: -32000,
    message: 'No collection with this id exists.',
  },
  ERR_ITEM_NOT_FOUND: {
    status: 404,
    code: 'item_not_found',
    rpc: -32000,
    message: 'No item with this id exists in the collection.',
  },
  ERR_ITEM_KEY_CONFLICT: {
    status: 409,
    code: 'item_key_conflict',
    rpc: -32000,
    message: 'An item with this key already exists in this collection.',
  },
  ERR_INVALID_TRIGGER_URL: {
    status: 400,
    code: 'invalid_trigger_url',
    rpc: -32602,
    message: 'A trigger URL entry is invalid.',
  },
  ERR_INVALID_CONTENT: {
    status: 400,
    code: 'invalid_content',
    rpc: -32602,
    message: 'The content does not fit the collection type.',
  },
  ERR_COLLECTION_TYPE_MISMATCH: {
    status: 400,
    code: 'collection_type_mismatch',
    rpc: -32602,
    message: 'This endpoint does not serve this kind of collection.',
  },
  ERR_COLLECTION_MISMATCH: {
    status: 400,
    code: 'collection_mismatch',
    rpc: -32602,
    message: 'dataStoreId must equal the collectionId query parameter.',
  },

  // run files behind signed URLs (openapi/run-files.yaml downloadRunFile)
  ERR_FILE_INVALID_SIGNATURE: {
    status: 403,
    code: 'invalid_signature',
    rpc: -32000,
    message: 'The download URL signature is not valid.',
  },
  ERR_FILE_URL_EXPIRED: {
    status: 403,
    code: 'url_expired',
    rpc: -32000,
    message: 'The download URL has expired; request a new one.',
  },
  ERR_FILE_NOT_FOUND: { status: 404, code: 'file_not_found', rpc: -32000, message: 'The file no longer exists.' },

  // queues and CSV batches (openapi/queues.yaml, spec section 15)
  ERR_QUEUE_NOT_FOUND: { status: 404, code: 'queue_not_found', rpc: -32000, message: 'No queue with this id exists.' },
  ERR_BATCH_NOT_FOUND: {
    status: 404,
    code: 'batch_not_found',
    rpc: -32000,
    message: 'No batch with this id exists in the queue.',
  },
  ERR_QUEUE_TRIGGER_NOT_FOUND: {
    status: 404,
    code: 'trigger_not_found',
    rpc: -32000,
    message: 'No trigger with this id exists.',
  },
  ERR_QUEUE_INVALID_TRIGGER: {
    status: 400,
    code: 'invalid_trigger',
    rpc: -32602,
    message: 'Batches need an enabled workflow trigger.',
  },
  ERR_CSV_INVALID_FILENAME: {
    status: 400,
    code: 'invalid_filename',
    rpc: -32602,
    message: 'The file name must end in .csv and contain no path separators.',
  },
  ERR_CSV_TOO_LARGE: {
    status: 413,
    code: 'file_too_large',
    rpc: -32602,
    message: 'CSV files are limited to 1 GiB (1073741824 bytes).',
  },
  ERR_CSV_EMPTY: { status: 400, code: 'empty_file', rpc: -32602, message: 'The uploaded file is empty.' },
  ERR_CSV_NOT_UPLOADED: {
    status: 400,
    code: 'csv_not_uploaded',
    rpc: -32602,
    message: 'No CSV file has been uploaded for this key.',
  },
  ERR_CSV_ALREADY_USED: {
    status: 409,
    code: 'csv_already_used',
    rpc: -32000,
    message: 'A batch has already been created from this upload.',
  },
  ERR_CSV_INVALID_SIGNATURE: {
    status: 403,
    code: 'invalid_signature',
    rpc: -32000,
    message: 'The upload URL signature is not valid.',
  },
  ERR_CSV_URL_EXPIRED: {
    status: 403,
    code: 'url_expired',
    rpc: -32000,
    message: 'The upload URL has expired; request a new one.',
  },
  ERR_BATCH_FINISHED: {
    status: 409,
    code: 'batch_finished',
    rpc: -32000,
    message: 'The batch has already finished and cannot be cancelled.',
  },
} as const satisfies Record<string, { status: number; code: string; rpc: number; message: string }>;

export type ErrorKey = keyof typeof catalogue;

export class AppError extends Error {
  readonly key: ErrorKey | undefined;
  readonly status: number;
  readonly code: string;
  readonly rpc: number;
  readonly details: unknown;
  readonly headers: Record<string, string> | undefined;

  constructor(
    key: ErrorKey,
    opts: {
      message?: string;
      details?: unknown;
      status?: number;
      code?: string;
      headers?: Record<string, string>;
    } = {},
  ) {
    const entry = catalogue[key];
    super(opts.message ?? entry.message);
    this.name = 'AppError';
    this.key = key;
    this.status = opts.status ?? entry.status;
    this.code = opts.code ?? entry.code;
    this.rpc = entry.rpc;
    this.details = opts.details;
    this.headers = opts.headers;
  }
}

/**
 * OAuth 2.0 token endpoint errors (RFC 6749 section 5.2), and `too_many_requests`: a source
 * address over its limit of failed client authentications (openapi/auth.yaml, 429).
 */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'too_many_requests';

function oauthStatus(error: OAuthErrorCode): number {
  if (error === 'invalid_client') return 401;
  return error === 'too_many_requests' ? 429 : 400;
}

export class OAuthError extends Error {
  readonly status: number;
  /** `status` overrides the code's own: 429 for an invalid_client over its failure limit. */
  constructor(
    readonly error: OAuthErrorCode,
    description: string,
    readonly headers?: Record<string, string>,
    status?: number,
  ) {
    super(description);
    this.name = 'OAuthError';
    this.status = status ?? oauthStatus(error);
  }
}

export function isAppError(e: unknown): e is AppError {
  return e instanceof AppError;
}
