import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  create,
  ExportTraceServiceRequestSchema,
  ExportTraceServiceResponseSchema,
  FlightService,
  grpcServiceDefinition,
  Querier,
  TraceService,
} from './index.ts';
import type { ExportTraceServiceRequest, ExportTraceServiceResponse } from './index.ts';

describe('grpcServiceDefinition', () => {
  it('uses the fully qualified method paths that real clients dial', () => {
    const trace = grpcServiceDefinition(TraceService);
    expect(trace.Export?.path).toBe('/opentelemetry.proto.collector.trace.v1.TraceService/Export');
    expect(trace.Export?.originalName).toBe('export');

    const flight = grpcServiceDefinition(FlightService);
    expect(flight.DoGet).toMatchObject({ path: '/arrow.flight.protocol.FlightService/DoGet', requestStream: false, responseStream: true });
    expect(flight.DoPut).toMatchObject({ requestStream: true, responseStream: true });
    expect(flight.Handshake).toMatchObject({ requestStream: true, responseStream: true });
    expect(flight.GetFlightInfo).toMatchObject({ requestStream: false, responseStream: false });

    expect(grpcServiceDefinition(Querier).FindTraceByID?.path).toBe('/tempopb.Querier/FindTraceByID');
  });

  describe('round trip through a real grpc-js server', () => {
    const server = new grpc.Server();
    const received: ExportTraceServiceRequest[] = [];
    let client: grpc.Client & {
      Export(request: ExportTraceServiceRequest, callback: (err: grpc.ServiceError | null, res: ExportTraceServiceResponse) => void): void;
    };

    beforeAll(async () => {
      server.addService(grpcServiceDefinition(TraceService), {
        export(
          call: grpc.ServerUnaryCall<ExportTraceServiceRequest, ExportTraceServiceResponse>,
          callback: grpc.sendUnaryData<ExportTraceServiceResponse>,
        ) {
          received.push(call.request);
          const spans = call.request.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans));
          callback(
            null,
            create(ExportTraceServiceResponseSchema, {
              partialSuccess: { rejectedSpans: BigInt(spans.length - 1), errorMessage: 'kept one' },
            }),
          );
        },
      });
      const port = await new Promise<number>((resolve, reject) =>
        server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
      );
      const Client = grpc.makeGenericClientConstructor(grpcServiceDefinition(TraceService), 'TraceService');
      client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as typeof client;
    });

    afterAll(() => {
      client?.close();
      server.forceShutdown();
    });

    it('carries a TraceService/Export request and its partial_success response', async () => {
      const traceId = Uint8Array.from({ length: 16 }, (_, i) => i + 1);
      const request = create(ExportTraceServiceRequestSchema, {
        resourceSpans: [
          {
            resource: { attributes: [{ key: 'service.name', value: { value: { case: 'stringValue', value: 'checkout' } } }] },
            scopeSpans: [
              {
                spans: [
                  { traceId, spanId: new Uint8Array(8).fill(7), name: 'GET /cart', startTimeUnixNano: 1_700_000_000_000_000_000n },
                  { traceId, spanId: new Uint8Array(8).fill(8), name: 'SELECT', flags: 0x301 },
                ],
              },
            ],
          },
        ],
      });

      const response = await new Promise<ExportTraceServiceResponse>((resolve, reject) =>
        client.Export(request, (err, res) => (err ? reject(err) : resolve(res))),
      );

      expect(response.partialSuccess?.rejectedSpans).toBe(1n);
      expect(response.partialSuccess?.errorMessage).toBe('kept one');
      const spans = received[0]?.resourceSpans[0]?.scopeSpans[0]?.spans ?? [];
      expect(spans.map((s) => s.name)).toEqual(['GET /cart', 'SELECT']);
      expect(Array.from(spans[0]!.traceId)).toEqual(Array.from(traceId));
      expect(spans[0]!.startTimeUnixNano).toBe(1_700_000_000_000_000_000n);
      expect(spans[1]!.flags).toBe(0x301);
    });
  });
});
