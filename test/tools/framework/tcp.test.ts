/**
 * Shared TCP tool helpers (src/tools/framework/tcp.ts): state names, bcc's port lists and the generated
 * predicates and per-family address expressions.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  familyFilter,
  ipVersion,
  parsePortList,
  perFamily,
  PortListError,
  portFilter,
  TCP,
  tcpFlagsText,
  tcpStateName,
} from '../../../src/tools/framework/tcp.js';

describe('framework/tcp', () => {
  it('state numbers and names follow include/net/tcp_states.h', () => {
    assert.equal(TCP.ESTABLISHED, 1);
    assert.equal(TCP.CLOSE, 7);
    assert.equal(TCP.NEW_SYN_RECV, 12);
    assert.equal(tcpStateName(2), 'SYN_SENT');
    assert.equal(tcpStateName(9), 'LAST_ACK');
    assert.equal(tcpStateName(99), '99');
  });

  it('port lists parse as Python int() and reject with its ValueError text', () => {
    assert.deepEqual(parsePortList('80'), [80]);
    assert.deepEqual(parsePortList('80, 81,+443'), [80, 81, 443]);
    assert.throws(
      () => parsePortList('80,http'),
      (e: unknown) => {
        assert.ok(e instanceof PortListError);
        assert.equal(e.message, "invalid literal for int() with base 10: 'http'");
        return true;
      },
    );
    assert.throws(() => parsePortList(''), PortListError);
  });

  it('predicates for ports and families', () => {
    assert.equal(portFilter('args.dport', [80, 81]), 'args.dport == 80 || args.dport == 81');
    assert.equal(portFilter('args.dport', null), null);
    assert.equal(portFilter('args.dport', []), null);
    assert.equal(familyFilter(true, false), 'args.family == 2');
    assert.equal(familyFilter(false, true, '$f'), '$f == 10');
    assert.equal(familyFilter(false, false), null);
    assert.equal(ipVersion(2), 4);
    assert.equal(ipVersion(10), 6);
  });

  it('perFamily picks the v4 or v6 address fields', () => {
    assert.equal(
      perFamily((s, d, ip) => `print(${s}, ${d}, ${ip});`),
      '  if (args.family == 2) {\n    print(ntop(args.saddr), ntop(args.daddr), 4);\n  } else {\n' +
        '    print(ntop(args.saddr_v6), ntop(args.daddr_v6), 6);\n  }\n',
    );
  });
});

describe('framework/tcp flags', () => {
  it("tcpFlagsText is bcc's tcp.flags2str: set bits FIN..CWR in order, |-joined", () => {
    assert.equal(tcpFlagsText(0), '');
    assert.equal(tcpFlagsText(0x10), 'ACK');
    assert.equal(tcpFlagsText(0x12), 'SYN|ACK');
    assert.equal(tcpFlagsText(0x19), 'FIN|PSH|ACK');
    assert.equal(tcpFlagsText(0xff), 'FIN|SYN|RST|PSH|ACK|URG|ECE|CWR');
  });
});
