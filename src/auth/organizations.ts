import type { Knex } from 'knex';
import { newId, nowIso } from '../kernel/ids.js';

/** An organisation: the tenant every credential, key and resource belongs to (spec "Authentication" 4). */
export interface Organization {
  id: string;
  name: string;
  createdAt: string;
}

interface OrganizationRow {
  id: string;
  name: string;
  created_at: string;
}

function toOrganization(row: OrganizationRow): Organization {
  return { id: row.id, name: row.name, createdAt: row.created_at };
}

export async function createOrganization(db: Knex, input: { name: string }): Promise<Organization> {
  const row: OrganizationRow = { id: newId('org'), name: input.name, created_at: nowIso() };
  await db('organizations').insert(row);
  return toOrganization(row);
}

export async function getOrganization(db: Knex, id: string): Promise<Organization | null> {
  const row = (await db('organizations').where({ id }).first()) as OrganizationRow | undefined;
  return row ? toOrganization(row) : null;
}

/** Whether the organisation exists (the CLI's --org). */
export async function organizationExists(db: Knex, id: string): Promise<boolean> {
  return Boolean(await db('organizations').where({ id }).first('id'));
}

/** Up to `limit` organisation ids, newest first (discovery's pre-warm, the CLI's default organisation). */
export async function newestOrganizationIds(db: Knex, limit: number): Promise<string[]> {
  const rows = (await db('organizations').select('id').orderBy('created_at', 'desc').orderBy('id').limit(limit)) as {
    id: string;
  }[];
  return rows.map((r) => r.id);
}
