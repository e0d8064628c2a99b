import { createHash } from 'node:crypto';
import { OpenAPIBackend, type Document } from 'openapi-backend';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { Reply } from './types.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** openapi-backend checks documents against OpenAPI 3.0; our documents are 3.1. */
class OpenAPI31Backend extends OpenAPIBackend {
  override validateDefinition(): Document {
    return this.document;
  }
}

export class ResponseValidationError extends Error {
  constructor(
    readonly operationId: string,
    readonly status: number,
    readonly problems: unknown,
  ) {
    super(`Response of ${operationId} (${status}) breaks the OpenAPI document: ${JSON.stringify(problems)}`);
    this.name = 'ResponseValidationError';
  }
}

/**
 * Checks a reply against the bundle: the status must be documented, JSON bodies must match
 * the schema for that status, and documented required headers must be present. Used in
 * tests (src/app.ts AppOptions.validateResponses); a mismatch is recorded and answered with 500.
 */
/**
 * Compiled documents, shared by every validator of the process: a test process starts dozens of
 * servers on the same bundle. Each operation's schemas are compiled when a reply of it is first
 * checked (openapi-backend's quick mode: the document is dereferenced at once and its validators
 * compiled lazily), since compiling all of the bundle's up front takes 8–9 s here, and over 20 s
 * on a loaded machine. Failures stay per validator.
 */
const compiled = new Map<string, Promise<OpenAPI31Backend>>();

export class ResponseValidator {
  readonly failures: ResponseValidationError[] = [];
  private constructor(private readonly api: OpenAPI31Backend) {}

  static async create(document: Record<string, unknown>): Promise<ResponseValidator> {
    const key = createHash('sha256').update(JSON.stringify(document)).digest('hex');
    let api = compiled.get(key);
    if (!api) {
      api = ResponseValidator.compile(document);
      compiled.set(key, api);
      api.catch(() => compiled.delete(key));
    }
    return new ResponseValidator(await api);
  }

  private static async compile(document: Record<string, unknown>): Promise<OpenAPI31Backend> {
    const api = new OpenAPI31Backend({
      definition: structuredClone(document) as unknown as Document,
      quick: true,
      validate: true,
      customizeAjv: (_orig, ajvOpts) => {
        const ajv = new Ajv2020({ ...ajvOpts, strict: false, allErrors: true } as never);
        addFormats(ajv);
        ajv.addFormat('binary', true);
        return ajv as never;
      },
    });
    await api.init();
    return api;
  }

  private documented(operationId: string, status: number): Record<string, unknown> | undefined {
    const op = this.api.getOperation(operationId);
    const responses = (op?.responses ?? {}) as Record<string, Record<string, unknown>>;
    return responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
  }

  check(
    operationId: string,
    reply: Pick<Reply, 'status' | 'body' | 'headers' | 'contentType' | 'stream'>,
  ): ResponseValidationError | undefined {
    const response = this.documented(operationId, reply.status);
    const problems: unknown[] = [];
    if (!response) problems.push(`status ${reply.status} is not documented`);
    else {
      const content = (response.content ?? {}) as Record<string, unknown>;
      const type = reply.contentType ?? (reply.body === undefined ? undefined : 'application/json');
      if (
        type &&
        !reply.stream &&
        Object.keys(content).length > 0 &&
        !Object.keys(content).some(
          (t) => t === type || t === '*/*' || (t.endsWith('/*') && type.startsWith(t.slice(0, -1))),
        )
      ) {
        problems.push(`content type ${type} is not documented for ${reply.status}`);
      }
      if (type === 'application/json' && content['application/json']) {
        const result = this.api.validateResponse(reply.body, operationId, reply.status);
        if (!result.valid) problems.push(...(result.errors ?? []));
      }
      const headers = Object.fromEntries(Object.entries(reply.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
      for (const [name, def] of Object.entries((response.headers ?? {}) as Record<string, { required?: boolean }>)) {
        if (def.required && headers[name.toLowerCase()] === undefined) problems.push(`required header ${name} missing`);
      }
    }
    if (problems.length === 0) return undefined;
    const err = new ResponseValidationError(operationId, reply.status, problems);
    this.failures.push(err);
    return err;
  }
}
