import type { Clock } from '../../core/clock.js';
import { describeError, ERROR_CODES, FrondError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { formatDomain, type OpaqueDomain, parseDomain } from '../../core/opaque-codec.js';
import { assertValidTag } from '../../core/tag.js';
import { DEFAULT_TAG_STEP, type TagCatalogue } from '../../core/tag-catalogue.js';
import type { OpaqueTags } from './opaque-tags.js';

/** A tag the configuration declares opaque (`--opaque-tag TAG=DOMAIN`, `"opaque-tag"` in --config). */
export interface DeclaredOpaqueTag {
  tag: string;
  domain: OpaqueDomain;
}

/**
 * `TAG=DOMAIN`, split at the last `=`: a domain (`bits:53`, `digits:11`) holds none, while a tag may
 * (Leaf's biz_tag is any text up to 128 characters).
 */
export function parseDeclaredOpaqueTag(text: string, where: string): DeclaredOpaqueTag {
  const at = text.lastIndexOf('=');
  if (at <= 0)
    throw new FrondError(
      'INVALID_CONFIG',
      `${where} ${JSON.stringify(text)} must be TAG=DOMAIN, such as order=digits:11 or user=bits:53`,
    );
  let tag: string;
  let domain: OpaqueDomain;
  try {
    tag = assertValidTag(text.slice(0, at));
    domain = parseDomain(text.slice(at + 1));
  } catch (error) {
    throw new FrondError('INVALID_CONFIG', `${where} ${JSON.stringify(text)}: ${(error as Error).message}`);
  }
  return { tag, domain };
}

/** What a declared tag was found as: made now, or already opaque with the declared domain. */
export type DeclaredOutcome = 'created' | 'present';

/**
 * Makes the store agree with the declared opaque tags, or says why it cannot. A missing tag is
 * created opaque (first segment ID 1, step 1000, as `frond tag add --opaque`); a tag that is
 * already opaque with the declared domain and this node's secret is left as it is. Anything else is
 * refused with OPAQUE_TAG_FIXED and never changed: a plain tag has handed out its segment IDs as
 * they are, and a permutation of them could equal one of those; another domain or another key
 * permutes the same segment IDs differently, so it could repeat an opaque ID already handed out.
 * Store failures are thrown as they are (the caller retries them).
 */
export async function applyDeclaredOpaqueTags(
  store: TagCatalogue,
  opaque: OpaqueTags,
  declared: readonly DeclaredOpaqueTag[],
): Promise<Map<string, DeclaredOutcome>> {
  const outcomes = new Map<string, DeclaredOutcome>();
  for (const { tag, domain } of declared) {
    const wanted = formatDomain(domain);
    let entry = await store.tag(tag);
    if (entry === undefined) {
      try {
        await store.addTag(
          { tag, step: DEFAULT_TAG_STEP, start: 1n, description: null },
          opaque.settingFor(tag, domain),
        );
        outcomes.set(tag, 'created');
        continue;
      } catch (error) {
        // Another node declaring the same tag created it first: check what it made.
        if (!(error instanceof FrondError && error.code === 'TAG_EXISTS')) throw error;
        entry = await store.tag(tag);
        if (entry === undefined) throw error;
      }
    }
    if (entry.opaque === null)
      throw fixed(
        `tag ${tag} is a plain tag in the store, whose segment IDs may have been handed out as they are: it cannot become opaque (its opaque IDs could equal them). Declare a new tag opaque instead`,
      );
    if (entry.opaque.domain !== wanted)
      throw fixed(
        `tag ${tag} is opaque ${entry.opaque.domain} in the store, not ${wanted}: a tag's domain is fixed when it is created (another one could repeat an ID already handed out). Declare ${tag}=${entry.opaque.domain}, or a new tag`,
      );
    if (opaque.matches(tag, entry.opaque) === false)
      throw new FrondError(
        'OPAQUE_SECRET_MISMATCH',
        `tag ${tag} is opaque under another secret than this node's (fingerprint ${opaque.fingerprint}): every node must have the same FROND_OPAQUE_SECRET(_FILE)`,
      );
    outcomes.set(tag, 'present');
  }
  return outcomes;
}

/** Whether a failure of `applyDeclaredOpaqueTags` may pass on a later try (the store was down). */
export function isRetryableDeclarationError(error: unknown): boolean {
  if (!(error instanceof FrondError)) return true;
  return ERROR_CODES[error.code].retryable && error.code !== 'OPAQUE_SECRET_MISMATCH';
}

function fixed(message: string): FrondError {
  return new FrondError('OPAQUE_TAG_FIXED', message);
}

/** ms between two tries of the declaration while the store is down at start. */
const RETRY_MS = 5_000;

/**
 * The declared opaque tags of one node. The start applies them once: a refusal stops the start (one
 * line), a store that is down does not (a node starts without its store, as for every other tag),
 * and the declaration is tried again every 5 s until it holds or is refused; until then /readyz
 * says so. A refusal found later leaves the node unready with the reason, and never changes a tag.
 */
export class OpaqueDeclaration {
  /** Why the declaration does not hold yet, for /readyz; undefined once it holds. */
  problem: string | undefined;
  private cancel: (() => void) | undefined;
  private closed = false;

  constructor(
    private readonly store: TagCatalogue,
    private readonly opaque: OpaqueTags,
    private readonly declared: readonly DeclaredOpaqueTag[],
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    if (this.opaque.secret === undefined)
      throw new FrondError(
        'OPAQUE_SECRET_MISSING',
        `--opaque-tag declares ${this.declared.map((d) => d.tag).join(', ')} opaque, and this node has no opaque-ID secret: set FROND_OPAQUE_SECRET_FILE (or FROND_OPAQUE_SECRET), the one every node shares`,
      );
    const error = await this.tryOnce();
    if (error === undefined) return;
    if (!isRetryableDeclarationError(error)) throw error;
    this.unchecked(error);
  }

  close(): void {
    this.closed = true;
    this.cancel?.();
  }

  /** undefined when the declaration holds; the failure otherwise. */
  private async tryOnce(): Promise<unknown> {
    try {
      const outcomes = await applyDeclaredOpaqueTags(this.store, this.opaque, this.declared);
      this.problem = undefined;
      for (const [tag, outcome] of outcomes)
        this.logger.log('info', 'opaque.declared', {
          tag,
          domain: formatDomain((this.declared.find((d) => d.tag === tag) as DeclaredOpaqueTag).domain),
          outcome,
        });
      return undefined;
    } catch (error) {
      return error;
    }
  }

  private unchecked(error: unknown): void {
    this.problem = `declared opaque tags not yet checked: ${describeError(error)}`;
    this.logger.log('warn', 'opaque.declaration_unchecked', {
      error: describeError(error),
      retryMs: RETRY_MS,
    });
    this.cancel = this.clock.schedule(() => void this.retry(), RETRY_MS);
  }

  private async retry(): Promise<void> {
    if (this.closed) return;
    const error = await this.tryOnce();
    if (error === undefined || this.closed) return;
    if (isRetryableDeclarationError(error)) {
      this.cancel = this.clock.schedule(() => void this.retry(), RETRY_MS);
      return;
    }
    this.problem = describeError(error);
    this.logger.log('error', 'opaque.declaration_refused', { error: describeError(error) });
  }
}
