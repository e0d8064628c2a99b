/**
 * Argument validation of the discovery tools with the generated ajv standalone validators
 * (schemas/ → generated/validators). A failure is a JSON-RPC error -32000
 * (spec Errors: "Tool gateway | validation"), whose message names the offending argument.
 */
import { CapabilitiesDiscoverInput, CapabilityDetailsInput } from '../../../generated/validators/schemas.js';
import { checkWith } from '../../gateway/index.js';
import type { DetailsArgs } from './details.js';
import type { DiscoverArgs } from './discover.js';

export const parseDiscoverArgs = (args: unknown): DiscoverArgs =>
  checkWith<DiscoverArgs>(CapabilitiesDiscoverInput, 'capabilities_discover', args);

export const parseDetailsArgs = (args: unknown): DetailsArgs =>
  checkWith<DetailsArgs>(CapabilityDetailsInput, 'capability_details', args);
