import { describe, expect, it } from 'vitest';
import { trace } from '@opentelemetry/api';
import { parentFromTraceparent } from './traceparent.ts';

describe('parentFromTraceparent', () => {
  const spanOf = (h: string | undefined) => {
    const ctx = parentFromTraceparent(h);
    return ctx ? trace.getSpanContext(ctx) : undefined;
  };

  it('reads a W3C traceparent as a remote parent, sampled flag kept', () => {
    expect(spanOf('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).toEqual({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      traceFlags: 1,
      isRemote: true,
    });
    expect(spanOf(' 00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-00 ')?.traceFlags).toBe(0);
  });

  it.each([undefined, '', 'garbage', 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`, `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`, '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7'])(
    'ignores %j',
    (h) => expect(parentFromTraceparent(h)).toBeUndefined(),
  );
});
