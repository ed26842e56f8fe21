import { parsePhoneNumberWithError } from 'libphonenumber-js';
import { ServiceError } from '../errors.js';

export interface PhoneNumber {
  /** Digits only, country code first, as the API spells it. */
  digits: string;
  e164: string;
  /** ISO 3166 alpha-2, undefined when the number fits several countries or none. */
  country?: string;
  /** Every country whose numbering plan the number fits (+44 7700 900123: GB, GG, IM, JE). */
  possibleCountries: string[];
  /** The country calling code, e.g. "44": coarse enough for a metric label. */
  callingCode: string;
}

/** Parses the API's digits-only number; throws `invalid_request` unless it is possible for its country. */
export function parsePhoneNumber(digits: string): PhoneNumber {
  if (!/^[0-9]{7,15}$/.test(digits)) {
    throw new ServiceError('invalid_request', 'phone_number must be 7 to 15 digits, country code first');
  }
  try {
    const parsed = parsePhoneNumberWithError(`+${digits}`);
    if (parsed.isPossible() && parsed.number === `+${digits}`) {
      return {
        digits,
        e164: parsed.number,
        country: parsed.country,
        possibleCountries: parsed.country ? [parsed.country] : parsed.getPossibleCountries(),
        callingCode: parsed.countryCallingCode,
      };
    }
  } catch {
    // libphonenumber's own parse errors end in the same answer as an impossible number.
  }
  throw new ServiceError('invalid_request', 'phone_number is not a possible number for its country');
}
