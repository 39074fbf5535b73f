import { ExportProfilesServiceRequestSchema, ExportProfilesServiceResponseSchema, create, toBinary, toJson } from '@floe/proto';
import { decodeMessage } from './decode.ts';
import type { OtlpSignal } from './signals.ts';

/**
 * OTLP profiles (v1development, v1.10/v1.11 wire layout): POST /v1development/profiles and
 * ProfilesService/Export into `<tenant>.<dataset>.profiles` (profiles-to-rows.ts). Registered in
 * signals.ts's SIGNALS like every other signal.
 */
export const profilesSignal: OtlpSignal = {
  name: 'profiles',
  httpPath: '/v1development/profiles',
  grpcMethod: '/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export',
  ingest: (ingest, ctx, body, format, times) => ingest.profiles(ctx, decodeMessage(ExportProfilesServiceRequestSchema, body, format), times),
  response(r, format) {
    const resp = create(ExportProfilesServiceResponseSchema, {
      partialSuccess: r.rejected > 0 ? { rejectedProfiles: BigInt(r.rejected), errorMessage: r.rejectReason ?? '' } : undefined,
    });
    return format === 'json' ? toJson(ExportProfilesServiceResponseSchema, resp) : toBinary(ExportProfilesServiceResponseSchema, resp);
  },
};
