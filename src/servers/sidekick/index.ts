/**
 * Discovery server `svc-sidekick` (spec section 8): public surface. See README.md.
 */
export {
  createSidekickServer,
  createDiscoveryEngine,
  SIDEKICK_PATH,
  DISCOVER_TOOL,
  DETAILS_TOOL,
  type SidekickOptions,
  type DiscoveryEngine,
} from './server.js';
export { createMemorySource, describedServerTools, type CatalogData, type MemorySource } from './memory-source.js';
export {
  UsageMemory,
  LEARNING_WINDOW_MS,
  MAX_ROWS_PER_ORG,
  learnedValue,
  toolKey,
  type UsageMemoryOptions,
  type LearnedUse,
} from './usage.js';
export { knexUsageStore, type UsageStore, type UsageRow, type UsageWrite } from './usage-store.js';
export { RedisPending, type Pending, type SharedPending } from './usage-pending.js';
export { loadSkillDir, parseSkill, SkillLibrary, DEFAULT_SKILLS_DIR, type SkillDoc } from './skills.js';
export { SKILL_SEPARATOR, type DetailsArgs, type DetailsResult, type DetailItem } from './details.js';
export {
  DEFAULT_LIMIT,
  type DiscoverArgs,
  type DiscoverResult,
  type DiscoverContext,
  type Kind,
  type ToolMatch,
  type ConnectionMatch,
  type ResourceMatch,
  type SkillMatch,
} from './discover.js';
export { EmbeddingsProvider, type EmbeddingsStatus } from './embeddings.js';
export { Semantic, SemanticIndex } from './semantic.js';
export { createDiscoveryMemory, type DiscoveryMemory, type DiscoveryMemoryOptions } from './learning.js';
