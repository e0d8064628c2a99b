/**
 * `switchyard collections …`: datastores, filestores, knowledge bases and vaults (spec section
 * 14) at a terminal, on the store directly, like the other verbs. Trigger URLs and items are
 * managed over HTTP (`/datacollection`, `/memory/items`): their keys are encrypted with the
 * service's secret key and their writes emit events, which belong to a running service.
 */
import type { Command } from 'commander';
import {
  collectionView,
  countItems,
  createCollection,
  deleteCollection,
  findCollection,
  listCollections,
  COLLECTION_TYPES,
  type CollectionType,
} from '../events/index.js';
import { deleteFiles } from '../files/index.js';
import { openBlobStore } from '../kernel/blobs.js';
import type { CliKit } from './agents.js';

export function registerCollectionCommands(program: Command, kit: CliKit): void {
  const collections = program
    .command('collections')
    .description('collections (spec section 14): list, show, create, delete');
  collections
    .command('list')
    .option('--type <type>', `only this type: ${COLLECTION_TYPES.join(', ')}`)
    .addOption(kit.orgOption())
    .action((o: { type?: string; org?: string }) =>
      kit.withStore(async ({ db }) => {
        if (o.type !== undefined && !(COLLECTION_TYPES as readonly string[]).includes(o.type))
          throw kit.fail(`--type must be one of ${COLLECTION_TYPES.join(', ')}`);
        const page = await listCollections(
          db,
          await kit.resolveOrg(db, o.org),
          { type: o.type as CollectionType | undefined },
          { limit: 200 },
        );
        const counts = await countItems(
          db,
          page.items.map((c) => c.id),
        );
        kit.print({
          items: page.items.map((c) => collectionView(c, counts.get(c.id) ?? 0)),
          nextCursor: page.nextCursor,
        });
      }),
    );
  collections
    .command('show <collectionId>')
    .addOption(kit.orgOption())
    .action((id: string, o: { org?: string }) =>
      kit.withStore(async ({ db }) => {
        const c = await findCollection(db, await kit.resolveOrg(db, o.org), id);
        if (!c) throw kit.fail(`no collection ${id}`);
        kit.print(collectionView(c, (await countItems(db, [c.id])).get(c.id) ?? 0));
      }),
    );
  collections
    .command('create')
    .requiredOption('--name <name>')
    .requiredOption('--type <type>', COLLECTION_TYPES.join(', '))
    .option('--description <text>')
    .addOption(kit.orgOption())
    .action((o: { name: string; type: string; description?: string; org?: string }) =>
      kit.withStore(async ({ db }) => {
        if (!(COLLECTION_TYPES as readonly string[]).includes(o.type))
          throw kit.fail(`--type must be one of ${COLLECTION_TYPES.join(', ')}`);
        if (o.name.length === 0 || o.name.length > 200) throw kit.fail('--name must be 1 to 200 characters');
        kit.print(
          collectionView(
            await createCollection(db, await kit.resolveOrg(db, o.org), {
              name: o.name,
              type: o.type as CollectionType,
              description: o.description,
            }),
            0,
          ),
        );
      }),
    );
  collections
    .command('delete <collectionId>')
    .description('delete the collection with its items, files and delivery log')
    .addOption(kit.orgOption())
    .action((id: string, o: { org?: string }) =>
      kit.withStore(async ({ db, config }) => {
        const orgId = await kit.resolveOrg(db, o.org);
        const files = await deleteCollection(db, orgId, id, undefined);
        if (!files) throw kit.fail(`no collection ${id}`);
        if (files.length > 0) await deleteFiles(db, openBlobStore(config), orgId, files);
        kit.print({ collectionId: id, deleted: true });
      }),
    );
}
