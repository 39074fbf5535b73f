import { fromJson, ScalarType } from '@bufbuild/protobuf';
import type { DescField, DescMessage, JsonValue, MessageShape } from '@bufbuild/protobuf';

// OTLP/JSON writes these bytes fields as hex, where proto3 JSON (and so fromJson) wants base64.
const HEX_ID_FIELDS = new Set(['trace_id', 'span_id', 'parent_span_id', 'profile_id']);
const HEX = /^(?:[0-9a-fA-F]{2})*$/;
const ODD_HEX = /^[0-9a-fA-F](?:[0-9a-fA-F]{2})*$/;
const ONE_BYTE = Buffer.of(0).toString('base64');

type JsonObject = { [key: string]: JsonValue };

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const fieldsByKey = new WeakMap<DescMessage, Map<string, DescField>>();

// Both spellings are accepted, as fromJson accepts them.
function fieldFor(desc: DescMessage, key: string): DescField | undefined {
  let byKey = fieldsByKey.get(desc);
  if (byKey === undefined) {
    byKey = new Map();
    for (const f of desc.fields) {
      byKey.set(f.name, f);
      byKey.set(f.jsonName, f);
    }
    fieldsByKey.set(desc, byKey);
  }
  return byKey.get(key);
}

function convertValue(field: DescField, value: JsonValue): JsonValue {
  switch (field.fieldKind) {
    case 'scalar':
      // A value that is not hex (e.g. a non-conforming sender's base64) is left for fromJson.
      if (field.scalar === ScalarType.BYTES && HEX_ID_FIELDS.has(field.name) && typeof value === 'string') {
        if (HEX.test(value)) return Buffer.from(value, 'hex').toString('base64');
        // Hex cut short (an odd count of digits) is a malformed id, which the span, record or
        // exemplar it belongs to is rejected for (OTLP partial success), not the whole request:
        // it becomes one byte, a length no id has.
        if (ODD_HEX.test(value)) return ONE_BYTE;
      }
      return value;
    case 'message':
      if (isObject(value)) hexIdsToBase64(field.message, value);
      return value;
    case 'list':
      if (field.listKind === 'message' && Array.isArray(value)) {
        for (const item of value) if (isObject(item)) hexIdsToBase64(field.message, item);
      }
      return value;
    case 'map':
      if (field.mapKind === 'message' && isObject(value)) {
        for (const item of Object.values(value)) if (isObject(item)) hexIdsToBase64(field.message, item);
      }
      return value;
    default:
      return value;
  }
}

/**
 * Rewrites, in place, the hex-encoded trace/span/parent-span/profile ids of an OTLP/JSON object
 * to base64, guided by the schema so that only bytes fields of those names are touched.
 * Returns the same object.
 */
export function hexIdsToBase64(desc: DescMessage, json: JsonObject): JsonObject {
  for (const key of Object.keys(json)) {
    const field = fieldFor(desc, key);
    const value = json[key];
    if (field === undefined || value === undefined || value === null) continue;
    json[key] = convertValue(field, value);
  }
  return json;
}

/**
 * Decodes an OTLP/JSON body (as OTLP HTTP exporters send it: camelCase keys, hex ids, int64 as
 * strings, enums as integers) into a message. Unknown fields are ignored, as OTLP requires of
 * receivers. Throws on malformed JSON or values of the wrong type.
 */
export function decodeOtlpJson<Desc extends DescMessage>(schema: Desc, jsonText: string | Uint8Array): MessageShape<Desc> {
  const text = typeof jsonText === 'string' ? jsonText : new TextDecoder().decode(jsonText);
  const parsed = JSON.parse(text) as JsonValue;
  if (isObject(parsed)) hexIdsToBase64(schema, parsed);
  return fromJson(schema, parsed, { ignoreUnknownFields: true });
}
