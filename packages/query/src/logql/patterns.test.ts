import { describe, expect, it } from 'vitest';
import { LogPatternMiner, tokenize } from './patterns.ts';

describe('log patterns', () => {
  it('groups lines into templates whose varying tokens read <_>, with counts per step', () => {
    const m = new LogPatternMiner(10);
    const lines: Array<[string, number, string]> = [
      ['GET /api/users/123 200 5ms', 100, 'info'],
      ['GET /api/users/456 200 7ms', 101, 'info'],
      ['GET /api/users/789 200 3ms', 115, 'info'],
      ['user alice logged in', 102, 'info'],
      ['user bob logged in', 125, 'info'],
      ['POST /api/orders 201 12ms', 103, 'info'],
      ['disk full on /dev/sda1', 104, 'error'],
      ['disk full on /dev/sdb1', 104, 'error'],
      ['user carol logged in', 126, 'debug'],
    ];
    for (const [line, t, level] of lines) m.add(line, t, level);
    expect(m.patterns()).toEqual([
      { pattern: 'GET <_> 200 <_>', level: 'info', samples: [[100, 2], [110, 1]] },
      { pattern: 'disk full on <_>', level: 'error', samples: [[100, 2]] },
      { pattern: 'user <_> logged in', level: 'info', samples: [[100, 1], [120, 1]] },
      { pattern: 'POST /api/orders 201 12ms', level: 'info', samples: [[100, 1]] },
      // Levels are mined apart.
      { pattern: 'user carol logged in', level: 'debug', samples: [[120, 1]] },
    ]);
  });

  it('keeps lines of different lengths or with too few tokens in common apart', () => {
    const m = new LogPatternMiner(60);
    for (const line of ['connection reset by peer', 'connection reset', 'connection refused by 10.0.0.1', '12 34', '56 78', '12 99']) m.add(line, 0, '');
    expect(m.patterns().map((p) => [p.pattern, p.level])).toEqual([
      ['12 <_>', 'unknown'],
      ['connection <_> by <_>', 'unknown'],
      ['56 78', 'unknown'],
      ['connection reset', 'unknown'],
    ]);
  });

  it('with no similarity required, a template of wildcards only says nothing and is left out', () => {
    const m = new LogPatternMiner(60, { similarity: 0 });
    m.add('1 b', 0, '');
    m.add('2 d', 0, '');
    expect(m.patterns()).toEqual([]);
  });

  it('bounds the templates per level and the tokens per line', () => {
    const m = new LogPatternMiner(60, { maxTemplates: 2 });
    for (const line of ['alpha one', 'beta two three', 'gamma four five six', 'delta']) m.add(line, 0, 'info');
    expect(m.patterns().map((p) => p.pattern).sort()).toEqual(['alpha one', 'beta two three']);
    expect(tokenize('a  b\tc', 10)).toEqual(['a', 'b', 'c']);
    expect(tokenize('a b c d e', 3)).toEqual(['a', 'b', '<_>']);
  });
});
