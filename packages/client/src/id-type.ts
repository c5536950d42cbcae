import { FrondClientError } from './errors.js';

/** How IDs are handed out: `bigint` (the default, exact for all 64 bits), `string`, or `number`. */
export type IdType = 'bigint' | 'string' | 'number';

/** The JavaScript type of an ID for each `IdType`. */
export type IdOf<T extends IdType> = T extends 'bigint' ? bigint : T extends 'string' ? string : number;

/** Turns a segment ID that is a safe integer (most of them, see `segment-runs.ts`) into the caller's type. */
export type FromSafeInteger<Id> = (id: number) => Id;

/** Turns a segment ID beyond ±(2^53 − 1) into the caller's type (`number` refuses it). */
export type FromBigInt<Id> = (id: bigint) => Id;

/** Turns a decimal ID from the server (a snowflake: up to 63 bits) into the caller's type. */
export type FromDecimal<Id> = (text: string) => Id;

export interface IdConverters<Id> {
  fromSafeInteger: FromSafeInteger<Id>;
  fromBigInt: FromBigInt<Id>;
  fromDecimal: FromDecimal<Id>;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

// One function per type, chosen once per client, so the call site on the hot path stays monomorphic.
const BIGINT: IdConverters<bigint> = {
  fromSafeInteger: (id) => BigInt(id),
  fromBigInt: (id) => id,
  fromDecimal: (text) => BigInt(text),
};

const STRING: IdConverters<string> = {
  fromSafeInteger: (id) => String(id),
  fromBigInt: (id) => id.toString(),
  fromDecimal: (text) => text,
};

const NUMBER: IdConverters<number> = {
  fromSafeInteger: (id) => id,
  fromBigInt: (id) => {
    if (id <= MAX_SAFE && id >= -MAX_SAFE) return Number(id);
    throw unsafeInteger(id.toString());
  },
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
    `ID ${text} is beyond ±(2^53 - 1) and cannot be a JavaScript number without losing precision; use idType 'bigint' or 'string'`,
  );
}
