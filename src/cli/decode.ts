import { FrondError } from '../core/errors.js';
import { formatDomain, OpaqueCodec, parseDomain } from '../core/opaque-codec.js';
import { parseSnowflakeId } from '../core/snowflake-layout.js';
import { assertValidTag } from '../core/tag.js';
import { tagNotFound } from '../core/tag-catalogue.js';
import { OpaqueSecret } from '../server/opaque/opaque-keys.js';
import { layoutSetting } from '../server/start/serve-settings.js';
import { DECODE } from './option-table.js';
import { parseCommand } from './options.js';
import { type CommandStore, commandStore, withStore } from './store-options.js';

export async function decodeCommand(args: string[], out: (line: string) => void): Promise<number> {
  const { settings, positionals, sources } = parseCommand(DECODE, args, { rejectUnknownEnv: true });
  if (settings.tag !== undefined)
    return decodeOpaque(settings.tag, positionals[0] as string, commandStore(settings, sources), out);
  const layout = layoutSetting(settings);
  const id = parseSnowflakeId(positionals[0] as string);
  const parts = layout.decompose(id);
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
  choice: CommandStore,
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
  const [opaque, where] = await withStore(choice, async (store) => {
    const options = await store.tag(tag);
    if (options === undefined) throw tagNotFound(tag);
    if (options.opaque === null)
      throw new FrondError('INVALID_ARGUMENT', `tag ${tag} is not opaque: its IDs are its segment IDs`);
    return [options.opaque, store.description] as const;
  });
  const domain = parseDomain(opaque.domain);
  if (secret.keyCheck(tag, domain) !== opaque.keyCheck)
    throw new FrondError(
      'OPAQUE_SECRET_MISMATCH',
      `tag ${tag} is opaque under another secret than this one (fingerprint ${secret.fingerprint})`,
    );
  const codec = new OpaqueCodec(secret.cipherFor(tag, domain), domain);
  const segmentId = codec.decode(BigInt(text)).toString();
  // On stderr: stdout stays one JSON object.
  process.stderr.write(`store: ${where}\n`);
  out(JSON.stringify({ tag, id: text, domain: formatDomain(domain), segmentId }));
  return 0;
}
