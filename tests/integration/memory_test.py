#!/usr/bin/env python3
"""What hostile clients can make the exporter hold in memory, one scenario
per test: responses asked for and never read (one address, then two), TLS
ClientHellos that announce more than TLS allows in practice, and a TLS
handshake flood from one address. Each measures the exporter's RSS
(/proc/PID/status) against its idle figure, during and after, and asserts
the documented bounds (docs/http-and-security.md); the handshake flood
prints what an uninvolved scraper waited. All on loopback, bounded in
count and time."""
import argparse, os, socket, ssl, statistics, struct, subprocess, tempfile, threading, time
import urllib.error, urllib.request
from harness import Tree, Exporter, write_config, parse_metrics, run_tests

ap = argparse.ArgumentParser()
ap.add_argument("--exporter", required=True)
ap.add_argument("--fixture", required=True)
args = ap.parse_args()

MB = 1 << 20
SCRAPER = "127.0.0.9"
PKI = tempfile.mkdtemp(prefix="memcg-mem-")
# The default profile; a node of ~2,500 cgroups gives a /metrics body of a few MB.
CONFIG = ''

def pki(name):
    return os.path.join(PKI, name)

def make_cert(kind):
    key = ["-newkey", "rsa:4096"] if kind == "rsa" else ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
    subprocess.run(["openssl", "req", "-x509", *key, "-nodes", "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", pki(f"{kind}.key"), "-out", pki(f"{kind}.crt")], check=True, capture_output=True)
    path = pki(f"{kind}.yml")
    with open(path, "w") as f:
        f.write(f"tls_server_config:\n  cert_file: {pki(kind + '.crt')}\n  key_file: {pki(kind + '.key')}\n")
    return path

class TlsExporter(Exporter):
    """The exporter serving TLS with `kind`'s certificate."""
    def __init__(self, kind):
        web = make_cert(kind)
        self.ctx = ssl.create_default_context(cafile=pki(f"{kind}.crt"))
        super().__init__(args.exporter, Tree(args.fixture).root, write_config(CONFIG), args=("--web.config.file", web))

    def url(self, path):
        return f"https://127.0.0.1:{self.port}{path}"

    def get(self, path, headers=None, method="GET"):
        req = urllib.request.Request(self.url(path), headers=headers or {}, method=method)
        try:
            with urllib.request.urlopen(req, timeout=10, context=self.ctx) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()
        except OSError:
            return None, {}, b""

def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")

def connect(ex, source, rcvbuf=None, timeout=10):
    s = socket.socket()
    if rcvbuf:  # a window that stays nearly closed: the response cannot leave the server
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.bind((source, 0))
    s.settimeout(timeout)
    s.connect(("127.0.0.1", ex.port))
    return s

def scrape(ex, tls_ctx=None, timeout=10):
    """One scrape from the uninvolved address: (ok, seconds)."""
    t0 = time.time()
    try:
        s = connect(ex, SCRAPER, timeout=timeout)
        if tls_ctx:
            s = tls_ctx.wrap_socket(s, server_hostname="localhost")
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(1 << 16):
            data += chunk
        s.close()
        return data.startswith(b"HTTP/1.1 200"), time.time() - t0
    except OSError:
        return False, time.time() - t0

def idle_rss(ex):
    """RSS once a few scrapes have run: the exporter's working set."""
    for _ in range(3):
        assert scrape(ex)[0]
        time.sleep(0.3)
    return rss(ex.proc.pid)

def unread_requests(ex, sources, per_source=64, cycles=2):
    """Each source opens `per_source` connections that ask for /metrics and
    never read, spread over ~2 s (several snapshots, several bodies); held
    3 s, then closed. Returns the highest RSS seen."""
    peak = 0
    for _ in range(cycles):
        conns = []
        for i in range(per_source):
            for src in sources:
                s = connect(ex, src, rcvbuf=4096)
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                conns.append(s)
            time.sleep(2.0 / per_source)
            peak = max(peak, rss(ex.proc.pid))
        for _ in range(30):
            peak = max(peak, rss(ex.proc.pid))
            time.sleep(0.1)
        assert scrape(ex)[0], "a scrape from another address is answered meanwhile"
        for s in conns:
            s.close()
    return peak

def settled_rss(ex, seconds=3):
    """RSS after the clients left and a scrape or two ran (each returns freed
    pages to the kernel)."""
    time.sleep(0.5)
    for _ in range(int(seconds / 0.5)):
        scrape(ex)
        time.sleep(0.5)
    return rss(ex.proc.pid)

def check_unread(sources):
    with Exporter(args.exporter, Tree(args.fixture, "kubernetes-2500").root, write_config(CONFIG)) as ex:
        body = len(ex.get("/metrics")[2])
        idle = idle_rss(ex)
        peak = unread_requests(ex, sources)
        after = settled_rss(ex)
        held = parse_metrics(ex.get("/metrics")[2].decode())[("memcg_exporter_http_response_buffer_bytes", ())]
        print(f"  {len(sources)} address(es) x 64 unread /metrics ({body / MB:.1f} MB each): "
              f"RSS idle {idle / MB:.0f} MB, peak {peak / MB:.0f} MB (+{(peak - idle) / MB:.0f}), "
              f"after {after / MB:.0f} MB (+{(after - idle) / MB:.0f})")
        assert body > 2 * MB, body
        assert peak - idle <= 64 * MB, (idle, peak)
        assert after - idle <= 16 * MB, (idle, after)
        assert held < MB, held

def test_unread_responses_from_one_address_stay_within_the_budget():
    check_unread(["127.0.0.3"])

def test_unread_responses_from_two_addresses_share_the_budget():
    check_unread(["127.0.0.3", "127.0.0.4"])

def hello_header(announced):
    """A TLS record header and a ClientHello header announcing `announced` bytes."""
    return struct.pack("!BHH", 22, 0x0301, 16384) + struct.pack("!B", 1) + announced.to_bytes(3, "big")

def test_client_hellos_announcing_more_than_16_kib_are_refused_before_they_cost_memory():
    with TlsExporter("ec") as ex:
        ctx = ex.ctx
        idle = rss(ex.proc.pid)
        conns, peak = [], 0
        for a in range(16):
            for i in range(64):
                s = connect(ex, f"127.0.1.{a + 1}")
                # Half send the header whole, half in two parts (5 + 4 bytes).
                h = hello_header(131000)
                if i % 2:
                    s.sendall(h[:5])
                    conns.append((s, h[5:]))
                else:
                    s.sendall(h)
                    conns.append((s, b""))
            peak = max(peak, rss(ex.proc.pid))
        time.sleep(0.1)
        for s, rest in conns:
            if rest:
                try:
                    s.sendall(rest)
                except OSError:
                    pass
        closed = 0
        for s, _ in conns:
            s.settimeout(5)
            try:
                closed += s.recv(1) == b""
            except OSError:
                closed += 1
            peak = max(peak, rss(ex.proc.pid))
            s.close()
        # A header cut short by the client's FIN: closed at once, not
        # after the head timeout (its hang-up would keep waking the loop).
        cut = []
        for _ in range(10):
            s = connect(ex, "127.0.1.99")
            s.sendall(hello_header(512)[:5])
            s.shutdown(socket.SHUT_WR)
            cut.append(s)
        for s in cut:
            s.settimeout(3)
            try:
                assert s.recv(1) == b"", "closed"
            except socket.timeout:
                raise AssertionError("a ClientHello header cut by a FIN was not closed within 3 s")
            except OSError:
                pass
            s.close()
        ok, _ = scrape(ex, ctx)
        refused = parse_metrics(scrape_text(ex, ctx))[("memcg_exporter_http_connections_refused_total", (("reason", "client_hello"),))]
        print(f"  1,024 ClientHellos announcing 131,000 bytes: {closed} closed by the server, {refused:.0f} counted; "
              f"RSS idle {idle / MB:.0f} MB, peak {peak / MB:.0f} MB (+{(peak - idle) / MB:.0f})")
        assert ok and closed == len(conns) and refused == len(conns), (ok, closed, refused)
        assert peak - idle <= 16 * MB, (idle, peak)

def scrape_text(ex, ctx):
    s = ctx.wrap_socket(connect(ex, SCRAPER), server_hostname="localhost")
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while chunk := s.recv(1 << 16):
        data += chunk
    return data.split(b"\r\n\r\n", 1)[1].decode()

def flood(ex, ctx, stop, counts):
    """Full TLS handshakes from one address, back to back, on one thread."""
    while not stop.is_set():
        try:
            s = ctx.wrap_socket(connect(ex, "127.0.0.5"), server_hostname="localhost")
            s.close()
            counts[0] += 1
        except OSError:
            pass

def test_a_handshake_flood_from_one_address_does_not_delay_other_scrapes():
    for kind in ("rsa", "ec"):
        with TlsExporter(kind) as ex:
            ctx = ssl.create_default_context(cafile=pki(f"{kind}.crt"))
            ctx.options |= ssl.OP_NO_TICKET  # every handshake a full one
            stop, counts = threading.Event(), [0]
            threads = [threading.Thread(target=flood, args=(ex, ctx, stop, counts)) for _ in range(3)]
            for t in threads:
                t.start()
            time.sleep(1)
            t0, n0 = time.time(), counts[0]
            waits = []
            for _ in range(20):
                ok, dt = scrape(ex, ctx)
                assert ok
                waits.append(dt)
                time.sleep(0.1)
            rate = (counts[0] - n0) / (time.time() - t0)
            stop.set()
            for t in threads:
                t.join()
            print(f"  {kind}: a flood of {rate:.0f} handshakes/s from one address; "
                  f"20 scrapes from another: median {statistics.median(waits) * 1000:.0f} ms, max {max(waits) * 1000:.0f} ms")
            assert statistics.median(waits) < 1.0, waits

run_tests(globals())
