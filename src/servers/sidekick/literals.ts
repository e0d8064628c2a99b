/**
 * Values in a request: file names, URLs, e-mail addresses, IP addresses, version numbers, chat
 * channels and issue keys ("rename draft.md to final.md", "flush the entry for 1.2.3.4", "let
 * #eng know", "hand ENG-77 to Jamal").
 * They are arguments of the tool the user wants, not words for what it does: "draft" in
 * `draft.md` says nothing about drafting. Each value is taken out of the words of the request,
 * and the word for its kind ("file", "url", "email", "ip address", "version", "channel",
 * "issue") takes its place, which is what tool names and descriptions say ("Move or rename
 * files").
 *
 * Recognised by shape only. A file name's extension must be a media type's extension (the
 * `mime-types` database); a host name (`example.com`, `monday.com`) keeps its words, since they
 * often name the product, and adds "url" only when it has a path. A product spelled like a file
 * (`node.js`) reads as a file name. Replacing the values ranks better on the dev half of
 * bench/discovery/real than keeping their words beside the kind (bench/discovery/README.md).
 */
import { lookup as mimeLookup } from 'mime-types';

export interface Literals {
  /** The request with its values blanked out. */
  rest: string;
  /** The words of the kinds of values found, once each, in order. */
  kinds: string[];
}

const EMAIL = /(?<![\p{L}\p{N}._%+-])[\p{L}\p{N}._%+-]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)+/gu;
const URL_WITH_SCHEME = /(?<![\p{L}\p{N}+.-])[a-z][a-z0-9+.-]*:\/\/\S+/giu;
/** A host with a path (`api.example.com/v1/*`, `youtu.be/abc`); a bare host is left alone. */
const HOST_PATH = /(?<![\p{L}\p{N}.-])(?:[a-z0-9-]+\.)+[a-z]{2,}\/\S*/giu;
const IP = /(?<![\p{N}.])\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b/gu;
const VERSION = /(?<![\p{L}\p{N}.])v?\d+\.\d+\.\d+(?:[-+][\p{L}\p{N}.-]+)?(?![\p{L}\p{N}])/gu;
/** `#general` or `#eng-alerts`; `#482` is a number (a pull request, an issue), not a channel. */
const CHANNEL = /(?<![\p{L}\p{N}&])#\p{L}[\p{L}\p{N}_-]*/gu;
/**
 * An issue tracker's key: a project key in capitals, a dash, a number (`ENG-77`, `PAY-88`; Jira,
 * Linear, YouTrack; Sentry's short ids `PAYMENTS-3F`). Capitals only, so "e-2" or "covid-19" in
 * lower case are left alone; "SHA-256" or "GPT-4" are read as keys too.
 */
const ISSUE_KEY = /(?<![\p{L}\p{N}-])[A-Z][A-Z0-9]{1,9}-\d+[A-Z0-9]*(?![\p{L}\p{N}-])/gu;
/** `name.ext` (also in a path), with an extension some media type uses. */
const FILE = /(?<![\p{L}\p{N}@_.-])[\p{L}\p{N}_-][\p{L}\p{N}_.-]*\.([a-z][a-z0-9]{0,5})(?![\p{L}\p{N}.@/])/giu;

/** The generic and most used top-level domains: `name.<one of these>` is a site, not a file. */
const HOST_ENDINGS = new Set(['com', 'org', 'net', 'edu', 'gov', 'io', 'ai', 'co', 'me', 'app', 'dev']);

const isFileExtension = (ext: string): boolean => !HOST_ENDINGS.has(ext.toLowerCase()) && mimeLookup(ext) !== false;

/** In order: an e-mail address is not read as a host, nor an IP address as a version. */
const KINDS: { pattern: RegExp; kind: string; accept?: (ext: string) => boolean }[] = [
  { pattern: EMAIL, kind: 'email' },
  { pattern: URL_WITH_SCHEME, kind: 'url' },
  { pattern: HOST_PATH, kind: 'url' },
  { pattern: IP, kind: 'ip address' },
  { pattern: VERSION, kind: 'version' },
  { pattern: CHANNEL, kind: 'channel' },
  { pattern: ISSUE_KEY, kind: 'issue' },
  { pattern: FILE, kind: 'file', accept: isFileExtension },
];

export function literals(request: string): Literals {
  let rest = request;
  const kinds: string[] = [];
  for (const { pattern, kind, accept } of KINDS) {
    // `group` is the first capture (FILE's extension, the only pattern with an `accept`).
    rest = rest.replace(pattern, (match: string, group: unknown) => {
      if (accept && !accept(String(group))) return match;
      if (!kinds.includes(kind)) kinds.push(kind);
      return ' ';
    });
  }
  return { rest, kinds };
}
