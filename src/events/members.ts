/**
 * The management list of a collection's items or files (openapi/management.yaml
 * listCollectionItems), oldest first. Vault items are listed without content (`content:
 * null`, `isSecret: true`): a vault is never returned in plain text by a list.
 */
import type { Config } from '../config/index.js';
import type { Knex } from 'knex';
import { FILESTORAGE_URL_TTL_SECONDS, signFileUrl } from '../files/index.js';
import { pageRows, type Page, type PageRequest } from '../kernel/page.js';
import type { CollectionRecord } from './collections.js';
import { holdsFiles } from './types.js';

interface MemberRow {
  id: string;
  key: string | null;
  sort_field: string | null;
  content: string | null;
  metadata: string;
  file_id: string | null;
  filename: string | null;
  file_size: number | string | null;
  mime_type: string | null;
  created_at: string;
  updated_at: string;
}

export async function listMembers(
  db: Knex,
  config: Pick<Config, 'secretKey' | 'baseUrls'>,
  c: CollectionRecord,
  page: PageRequest,
): Promise<Page<Record<string, unknown>>> {
  const q = db('collection_items').where({ collection_id: c.id });
  const { rows, nextCursor } = await pageRows<MemberRow & Record<string, unknown>>(
    q,
    { list: 'collection-items', column: 'id', keyPattern: /^(item|file)_[0-9a-f]{32}$/ },
    page,
  );
  const files = holdsFiles(c.type);
  const items = rows.map((r) => {
    const common = {
      itemId: r.id,
      collectionId: c.id,
      metadata: JSON.parse(r.metadata) as Record<string, unknown>,
      createdAt: r.created_at,
      updatedAt: r.updated_at,
    };
    if (files) {
      return {
        ...common,
        filename: r.filename!,
        fileSize: Number(r.file_size),
        mimeType: r.mime_type!,
        signedUrl: signFileUrl(config, r.file_id!, FILESTORAGE_URL_TTL_SECONDS),
      };
    }
    const secret = c.type === 'vault';
    return {
      ...common,
      key: r.key!,
      sortField: r.sort_field,
      content: secret ? null : (JSON.parse(r.content!) as unknown),
      ...(secret ? { isSecret: true } : {}),
    };
  });
  return { items, nextCursor };
}
