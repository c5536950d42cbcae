import type { SnowflakeService } from '../../core/snowflake-service.js';
import { disabled } from '../http/mode-disabled.js';
import type { TagIssuer } from '../opaque/tag-issuer.js';

/** The two modes as the ID routes reach them: refused with MODE_DISABLED, naming the flag, when off. */
export interface IdModes {
  needSegment(): TagIssuer;
  needSnowflake(): SnowflakeService;
}

export function idModes(issuer: TagIssuer | undefined, snowflake: SnowflakeService | undefined): IdModes {
  return {
    needSegment() {
      if (issuer === undefined) throw disabled('segment', '--no-segment');
      return issuer;
    },
    needSnowflake() {
      if (snowflake === undefined) throw disabled('snowflake', '--no-snowflake');
      return snowflake;
    },
  };
}
