export { type ClientState, createClient, type FrondClient } from './client.js';
export {
  FrondClientError,
  type FrondClientErrorCode,
  type FrondClientErrorDetails,
  type FrondClientOwnErrorCode,
  type FrondServerErrorCode,
  isFrondClientError,
  SERVER_ERROR_CODES,
} from './errors.js';
export type { BufferState } from './id-buffer.js';
export type { IdOf, IdType } from './id-type.js';
export { type ClientOptions, DEFAULTS } from './options.js';
export {
  decodeSnowflake,
  LEAF_EPOCH,
  LEAF_LAYOUT_BITS,
  type SnowflakeLayout,
  type SnowflakeLayoutOptions,
  type SnowflakeParts,
  snowflakeLayout,
} from './snowflake.js';
