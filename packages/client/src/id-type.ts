import { FrondClientError } from './errors.js';

/** How IDs are handed out: `bigint` (the default, exact for all 64 bits), `string`, or `number`. */
export type IdType = 'bigint' | 'string' | 'number';

/** The JavaScript type of an ID for each `IdType`. */
export type IdOf<T extends IdType> = T extends 'bigint' ? bigint : T extends 'string' ? string : number;

/** Turns a segment ID (always a safe integer, see `segment-runs.ts`) into the caller's type. */
export type FromSafeInteger<Id> = (id: number) => Id;

/** Turns a decimal ID from the server (a snowflake: up to 63 bits) into the caller's type. */
export type FromDecimal<Id> = (text: string) => Id;

export interface IdConverters<Id> {
  fromSafeInteger: FromSafeInteger<Id>;
  fromDecimal: FromDecimal<Id>;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

// One function per type, chosen once per client, so the call site on the hot path stays monomorphic.
const BIGINT: IdConverters<bigint> = {
  fromSafeInteger: (id) => BigInt(id),
  fromDecimal: (text) => BigInt(text),
};

const STRING: IdConverters<string> = {
  fromSafeInteger: (id) => String(id),
  fromDecimal: (text) => text,
};

const NUMBER: IdConverters<number> = {
  fromSafeInteger: (id) => id,
  fromDecimal: (text) => {
    // 2^53 - 1 has 16 digits, so a shorter decimal is always exact as a double.
    if (text.length < 16 || BigInt(text) <= MAX_SAFE) return Number(text);
    throw unsafeInteger(text);
  },
};

export function convertersFor<T extends IdType>(idType: T): IdConverters<IdOf<T>> {
  const converters = idType === 'bigint' ? BIGINT : idType === 'string' ? STRING : NUMBER;
  return converters as unknown as IdConverters<IdOf<T>>;
}

export function unsafeInteger(text: string): FrondClientError {
  return new FrondClientError(
    'UNSAFE_INTEGER',
    `ID ${text} is above 2^53 - 1 and cannot be a JavaScript number without losing precision; use idType 'bigint' or 'string'`,
  );
}
