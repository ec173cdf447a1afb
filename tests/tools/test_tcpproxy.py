#!/usr/bin/env python3
"""test_tcpproxy.py - reign_tcpproxy does what the fault tests rely on.

Forwarding (with half-close and a transfer larger than its buffers), freeze (nothing moves,
nothing is accepted, connections stay open), thaw (held bytes flow on), drop (both sides see a
reset, new connections still work), a target that refuses, and exit on SIGTERM.  The proxy
stands in front of a small echo server here; with REIGN_TEST_ZK_FILE set, also in front of the
ZooKeeper server it names.

Usage: test_tcpproxy.py [PROXY_BINARY]   (default: $REIGN_TCPPROXY)

Every wait is for an event (a log line of the proxy, bytes, a reset) with a generous timeout.
The checks that nothing moves while frozen look for half a second: a slow machine can only make
them pass wrongly, never fail wrongly.
"""

import os
import signal
import socket
import subprocess
import sys
import threading
import unittest

PROXY = None
WAIT = 30.0  # generous bound for anything that must happen
QUIET = 0.5  # how long "nothing happens" is watched


class EchoServer:
    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.cond = threading.Condition()
        self.accepted = 0
        self.resets = 0
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.cond:
                self.accepted += 1
                self.conns.append(conn)
                self.cond.notify_all()
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    def _echo(self, conn):
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    conn.shutdown(socket.SHUT_WR)
                    return
                conn.sendall(data)
        except (ConnectionResetError, BrokenPipeError):
            with self.cond:
                self.resets += 1
                self.cond.notify_all()
        except OSError:
            pass

    def wait_for(self, predicate):
        with self.cond:
            if not self.cond.wait_for(predicate, WAIT):
                raise AssertionError("echo server: condition not reached")

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


class Proxy:
    def __init__(self, target):
        self.proc = subprocess.Popen([PROXY, "0", target], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())
        self.cond = threading.Condition()
        self.log = []
        threading.Thread(target=self._read_log, daemon=True).start()

    def _read_log(self):
        for line in self.proc.stderr:
            sys.stderr.write(line)
            with self.cond:
                self.log.append(line)
                self.cond.notify_all()

    def signal(self, sig, expect, count=1):
        """Send a signal, then wait for the count-th log line containing `expect`."""
        self.proc.send_signal(sig)
        self.wait_log(expect, count)

    def wait_log(self, expect, count=1):
        with self.cond:
            ok = self.cond.wait_for(lambda: sum(expect in l for l in self.log) >= count, WAIT)
        if not ok:
            raise AssertionError(f"proxy never logged '{expect}' ({count}x)")

    def connect(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=WAIT)
        return s

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(WAIT)
        self.proc.stdout.close()
        self.proc.stderr.close()


def recv_exactly(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise AssertionError(f"connection closed after {len(out)} of {n} bytes")
        out += chunk
    return out


def nothing_arrives(sock):
    sock.settimeout(QUIET)
    try:
        data = sock.recv(1)
    except socket.timeout:
        return True
    finally:
        sock.settimeout(WAIT)
    raise AssertionError(f"received {data!r} while the proxy was frozen")


class TcpProxyTest(unittest.TestCase):
    def setUp(self):
        self.echo = EchoServer()
        self.addCleanup(self.echo.close)
        self.proxy = Proxy(f"127.0.0.1:{self.echo.port}")
        self.addCleanup(self.proxy.close)

    def test_forward_large_and_half_close(self):
        s = self.proxy.connect()
        self.addCleanup(s.close)
        payload = os.urandom(1 << 20)  # larger than the proxy's buffers and socket buffers
        sender = threading.Thread(target=lambda: (s.sendall(payload),
                                                  s.shutdown(socket.SHUT_WR)))
        sender.start()
        got = recv_exactly(s, len(payload))
        sender.join(WAIT)
        self.assertEqual(got, payload)
        self.assertEqual(s.recv(1), b"", "FIN should travel through the proxy both ways")
        self.proxy.wait_log("both sides done")

    def test_freeze_and_thaw(self):
        s1 = self.proxy.connect()
        self.addCleanup(s1.close)
        s1.sendall(b"one")
        self.assertEqual(recv_exactly(s1, 3), b"one")

        self.proxy.signal(signal.SIGUSR1, "frozen")
        s1.sendall(b"two")
        s2 = self.proxy.connect()  # completes in the kernel's backlog; not accepted
        self.addCleanup(s2.close)
        s2.sendall(b"three")
        nothing_arrives(s1)
        nothing_arrives(s2)
        with self.echo.cond:
            self.assertEqual(self.echo.accepted, 1, "a connection went through while frozen")

        self.proxy.signal(signal.SIGUSR2, "thawed")
        self.assertEqual(recv_exactly(s1, 3), b"two")
        self.assertEqual(recv_exactly(s2, 5), b"three")
        self.echo.wait_for(lambda: self.echo.accepted == 2)

    def test_drop_resets_both_sides(self):
        socks = [self.proxy.connect() for _ in range(2)]
        for s in socks:
            self.addCleanup(s.close)
            s.sendall(b"x")
            self.assertEqual(recv_exactly(s, 1), b"x")
        self.proxy.signal(signal.SIGHUP, "dropped 2 connection(s)")
        for s in socks:
            with self.assertRaises((ConnectionResetError, BrokenPipeError)):
                s.sendall(b"y")
                s.recv(1)
        self.echo.wait_for(lambda: self.echo.resets == 2)
        s3 = self.proxy.connect()
        self.addCleanup(s3.close)
        s3.sendall(b"after")
        self.assertEqual(recv_exactly(s3, 5), b"after")

    def test_drop_while_frozen(self):
        s = self.proxy.connect()
        self.addCleanup(s.close)
        s.sendall(b"a")
        self.assertEqual(recv_exactly(s, 1), b"a")
        self.proxy.signal(signal.SIGUSR1, "frozen")
        self.proxy.signal(signal.SIGHUP, "dropped 1 connection(s)")
        with self.assertRaises(ConnectionResetError):
            s.recv(1)
        self.proxy.signal(signal.SIGUSR2, "thawed")
        s2 = self.proxy.connect()
        self.addCleanup(s2.close)
        s2.sendall(b"b")
        self.assertEqual(recv_exactly(s2, 1), b"b")

    def test_exit_on_sigterm(self):
        self.proxy.proc.terminate()
        self.assertEqual(self.proxy.proc.wait(WAIT), 0)


class RefusingTargetTest(unittest.TestCase):
    def test_target_refuses(self):
        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connects are refused
        self.addCleanup(closed.close)
        proxy = Proxy(f"127.0.0.1:{closed.getsockname()[1]}")
        self.addCleanup(proxy.close)
        # The reset may even beat connect() back to the caller.
        with self.assertRaises(ConnectionResetError):
            s = proxy.connect()
            self.addCleanup(s.close)
            s.recv(1)
        proxy.wait_log("target unreachable")


@unittest.skipUnless(os.environ.get("REIGN_TEST_ZK_FILE"), "no ZooKeeper (REIGN_TEST_ZK_FILE)")
class ZooKeeperTest(unittest.TestCase):
    def test_ruok_through_proxy(self):
        with open(os.environ["REIGN_TEST_ZK_FILE"]) as f:
            target = f.read().strip().split(",")[0]
        proxy = Proxy(target)
        self.addCleanup(proxy.close)
        s = proxy.connect()
        self.addCleanup(s.close)
        s.sendall(b"ruok")
        self.assertEqual(recv_exactly(s, 4), b"imok")


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        PROXY = sys.argv.pop(1)
    PROXY = PROXY or os.environ.get("REIGN_TCPPROXY")
    if not PROXY:
        sys.exit("usage: test_tcpproxy.py PROXY_BINARY (or set REIGN_TCPPROXY)")
    unittest.main()
