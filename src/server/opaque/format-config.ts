import type { Clock } from '../../core/clock.js';
import { describeError, ERROR_CODES, FrondError } from '../../core/errors.js';
import type { FormatSetting } from '../../core/id-format.js';
import type { Logger } from '../../core/logger.js';
import { DEFAULT_TAG_STEP, type TagCatalogue } from '../../core/tag-catalogue.js';
import { newFormatSetting } from './format-setting.js';

/** A tag the configuration declares formatted (`--format-tag TAG=FORMAT[@ZONE]`, `"format-tag"` in --config). */
export interface DeclaredFormatTag {
  tag: string;
  setting: FormatSetting;
}

/** An IANA zone's name: letters, digits, `/`, `_`, `+`, `-` (`America/Argentina/Buenos_Aires`, `Etc/GMT+5`). */
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9/_+-]*$/;

/**
 * `TAG=FORMAT` or `TAG=FORMAT@ZONE`: the tag ends at the first `=` (a declared tag has none), the
 * zone follows the last `@` when what follows is a zone's name (a format may hold `@` elsewhere),
 * UTC otherwise. Checked as `frond tag add --format` checks it.
 */
export function parseDeclaredFormatTag(text: string, where: string): DeclaredFormatTag {
  const at = text.indexOf('=');
  if (at <= 0)
    throw new FrondError(
      'INVALID_CONFIG',
      `${where} ${JSON.stringify(text)} must be TAG=FORMAT or TAG=FORMAT@ZONE, such as order-no={yyyy}{MM}{dd}{seq:6}@Asia/Shanghai`,
    );
  const tag = text.slice(0, at);
  let format = text.slice(at + 1);
  let zone: string | undefined;
  const zoneAt = format.lastIndexOf('@');
  if (zoneAt >= 0 && ZONE_NAME.test(format.slice(zoneAt + 1))) {
    zone = format.slice(zoneAt + 1);
    format = format.slice(0, zoneAt);
  }
  try {
    return { tag, setting: newFormatSetting(tag, format, zone, undefined) };
  } catch (error) {
    throw new FrondError('INVALID_CONFIG', `${where} ${JSON.stringify(text)}: ${describeError(error)}`);
  }
}

/**
 * Makes the store agree with the declared formatted tags: a missing one is created (step 1000, as
 * `frond tag add`); one with the declared format and zone is left as it is; anything else under the
 * name (a plain or opaque tag, another format) is refused with FORMAT_TAG_FIXED and never changed.
 */
export async function applyDeclaredFormatTags(
  store: TagCatalogue,
  declared: readonly DeclaredFormatTag[],
): Promise<void> {
  for (const { tag, setting } of declared) {
    let entry = await store.tag(tag);
    if (entry === undefined) {
      try {
        await store.addTag({ tag, step: DEFAULT_TAG_STEP, start: 1n, description: null, format: setting });
        continue;
      } catch (error) {
        // Another node declaring the same tag created it first: check what it made.
        if (!(error instanceof FrondError && error.code === 'TAG_EXISTS')) throw error;
        entry = await store.tag(tag);
        if (entry === undefined) throw error;
      }
    }
    const found = entry.format;
    if (found === null || found.format !== setting.format || found.timeZone !== setting.timeZone)
      throw new FrondError(
        'FORMAT_TAG_FIXED',
        `--format-tag ${tag}: the store has it ${found === null ? (entry.opaque === null ? 'as a plain tag' : 'as an opaque tag') : `with the format ${found.format} in ${found.timeZone}`}, and a tag's kind and format are fixed when it is created; declare what it is, or a new tag`,
      );
  }
}

/** ms between two tries of the declaration while the store is down at start. */
const RETRY_MS = 5_000;

/**
 * The declared formatted tags of one node: applied at start (a refusal stops the start, a store
 * that is down does not: tried again every 5 s until it holds or is refused, logged).
 */
export class FormatDeclaration {
  private cancel: (() => void) | undefined;
  private closed = false;

  constructor(
    private readonly store: TagCatalogue,
    private readonly declared: readonly DeclaredFormatTag[],
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    const error = await this.tryOnce();
    if (error === undefined) return;
    if (!retryable(error)) throw error;
    this.later(error);
  }

  close(): void {
    this.closed = true;
    this.cancel?.();
  }

  private async tryOnce(): Promise<unknown> {
    try {
      await applyDeclaredFormatTags(this.store, this.declared);
      for (const { tag, setting } of this.declared)
        this.logger.log('info', 'format.declared', {
          tag,
          format: setting.format,
          timeZone: setting.timeZone,
        });
      return undefined;
    } catch (error) {
      return error;
    }
  }

  private later(error: unknown): void {
    if (this.closed) return;
    this.logger.log('warn', 'format.declaration_unchecked', {
      error: describeError(error),
      retryMs: RETRY_MS,
    });
    this.cancel = this.clock.schedule(() => void this.retry(), RETRY_MS);
  }

  private async retry(): Promise<void> {
    if (this.closed) return;
    const error = await this.tryOnce();
    if (error === undefined || this.closed) return;
    if (retryable(error)) this.later(error);
    else this.logger.log('error', 'format.declaration_refused', { error: describeError(error) });
  }
}

function retryable(error: unknown): boolean {
  return !(error instanceof FrondError) || ERROR_CODES[error.code].retryable;
}
