/**
 * The path Leaf's server matched its routes against, so that a Leaf client's URL reaches the same
 * route and the same tag. Leaf (leaf-server/pom.xml: Spring Boot 1.5.18, so Spring MVC 4.3.21 on
 * Tomcat 8.5.35) looks a request up by Spring's UrlPathHelper.getLookupPathForRequest, which takes
 * the raw request URI and
 *
 * - removes every `;` and what follows it up to the next `/` (removeSemicolonContent, on by
 *   default): `/api/segment/get/a;b` is the tag `a`, `/cache;jsessionid=1` is `/cache`; an encoded
 *   `%3B` is not a path parameter and stays in the tag, as there;
 * - then collapses `//` to `/` (getSanitizedPath).
 *
 * Its patterns then match with useTrailingSlashMatch (on by default: `/cache/` is `/cache`), and
 * `{key}` (AntPathMatcher) takes exactly one non-empty path segment: `/api/segment/get/a/b` and
 * `/api/segment/get/` match nothing.
 */
export function springLookupPath(path: string): string {
  // The common path has neither: no copy is made.
  if (path.indexOf(';') === -1 && path.indexOf('//') === -1) return path;
  let cleaned = path;
  for (let semicolon = cleaned.indexOf(';'); semicolon !== -1; semicolon = cleaned.indexOf(';', semicolon)) {
    const slash = cleaned.indexOf('/', semicolon);
    cleaned = cleaned.slice(0, semicolon) + (slash === -1 ? '' : cleaned.slice(slash));
  }
  return cleaned.replace(/\/{2,}/g, '/');
}

/** A fixed pattern (`/cache`) against a lookup path, with Spring's trailing-slash match. */
export function matchesFixed(pattern: string, lookupPath: string): boolean {
  return (
    lookupPath.startsWith(pattern) &&
    (lookupPath.length === pattern.length ||
      (lookupPath.length === pattern.length + 1 && lookupPath.endsWith('/')))
  );
}

/**
 * The `{key}` of `prefix{key}` (`/api/segment/get/`) in a lookup path: one non-empty segment, a
 * trailing slash ignored; undefined when the pattern does not match.
 */
export function segmentAfter(prefix: string, lookupPath: string): string | undefined {
  if (!lookupPath.startsWith(prefix)) return undefined;
  // One scan for a slash after the prefix instead of endsWith, a copy and includes on the copy.
  const slash = lookupPath.indexOf('/', prefix.length);
  if (slash === -1) return lookupPath.length > prefix.length ? lookupPath.slice(prefix.length) : undefined;
  // Only a trailing slash may follow the key, and the key must not be empty.
  if (slash !== lookupPath.length - 1 || slash === prefix.length) return undefined;
  return lookupPath.slice(prefix.length, slash);
}
