import { FrondError } from '../core/errors.js';
import { formatDomain, OpaqueCodec, parseDomain } from '../core/opaque-codec.js';
import { decomposeSnowflake, parseSnowflakeId } from '../core/snowflake-layout.js';
import { assertValidTag } from '../core/tag.js';
import { OpaqueSecret } from '../server/opaque/opaque-keys.js';
import { openStore } from '../stores/store-registry.js';
import { DECODE } from './option-table.js';
import { parseCommand } from './options.js';
import { storeOf } from './store-options.js';

export async function decodeCommand(args: string[], out: (line: string) => void): Promise<number> {
  const { settings, positionals } = parseCommand(DECODE, args, { rejectUnknownEnv: true });
  if (settings.tag !== undefined)
    return decodeOpaque(settings.tag, positionals[0] as string, storeOf(settings), out);
  const id = parseSnowflakeId(positionals[0] as string);
  const parts = decomposeSnowflake(id, settings.epoch);
  out(
    JSON.stringify({
      id: id.toString(),
      timestamp: parts.timestamp,
      time: new Date(parts.timestamp).toISOString(),
      workerId: parts.workerId,
      sequence: parts.sequence,
    }),
  );
  return 0;
}

/** The segment ID (position in the tag's sequence) behind an opaque ID: support tooling. */
async function decodeOpaque(
  rawTag: string,
  text: string,
  storeSpec: string,
  out: (line: string) => void,
): Promise<number> {
  const tag = assertValidTag(rawTag);
  if (!/^[0-9]{1,19}$/.test(text))
    throw new FrondError('INVALID_ID', `${JSON.stringify(text)} is not an opaque ID`);
  const secret = OpaqueSecret.fromEnvironment();
  if (secret === undefined)
    throw new FrondError(
      'OPAQUE_SECRET_MISSING',
      'decoding an opaque ID needs FROND_OPAQUE_SECRET_FILE (or FROND_OPAQUE_SECRET)',
    );
  const store = openStore(storeSpec);
  let options: Awaited<ReturnType<typeof store.tagOptions>>;
  try {
    options = await store.tagOptions(tag);
  } finally {
    await store.close();
  }
  if (options === undefined) throw new FrondError('TAG_NOT_FOUND', `tag ${tag} has no row in leaf_alloc`);
  if (options.opaque === null)
    throw new FrondError('INVALID_ARGUMENT', `tag ${tag} is not opaque: its IDs are its segment IDs`);
  const domain = parseDomain(options.opaque.domain);
  if (secret.keyCheck(tag, domain) !== options.opaque.keyCheck)
    throw new FrondError(
      'OPAQUE_SECRET_MISMATCH',
      `tag ${tag} is opaque under another secret than this one (fingerprint ${secret.fingerprint})`,
    );
  const codec = new OpaqueCodec(secret.cipherFor(tag, domain), domain);
  out(
    JSON.stringify({
      tag,
      id: text,
      domain: formatDomain(domain),
      segmentId: codec.decode(BigInt(text)).toString(),
    }),
  );
  return 0;
}
